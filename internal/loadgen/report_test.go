package loadgen

import (
	"strings"
	"testing"
	"time"

	"github.com/interlink-go/interlink/internal/loadgen/latency"
	"github.com/interlink-go/interlink/internal/loadgen/measure"
)

// A report sets each measurement beside each floor it has, and the wire
// floor beside the loopback floor only.
func TestReportSetsMeasurementsBesideTheirFloors(t *testing.T) {
	result := func(name string, ops int64) measure.Result {
		return measure.Result{Name: name, Ops: ops, Elapsed: time.Second, Latency: latency.Summary{Count: ops, P50: time.Millisecond}}
	}
	rep := &Report{Config: Config{Mode: ModeRoundtrip}, Results: []measure.Result{
		result("roundtrip", 600), result("floor", 1000), result("wirefloor", 800), result("boltfloor", 300),
	}}
	var out strings.Builder
	if err := rep.Write(&out); err != nil {
		t.Fatal(err)
	}
	var ratios []string
	for _, line := range strings.Split(out.String(), "\n") {
		if strings.Contains(line, " ops/s: ") {
			ratios = append(ratios, line)
		}
	}
	want := []string{
		"# roundtrip/floor ops/s: 0.60",
		"# roundtrip/wirefloor ops/s: 0.75",
		"# roundtrip/boltfloor ops/s: 2.00",
		"# wirefloor/floor ops/s: 0.80",
	}
	if strings.Join(ratios, "\n") != strings.Join(want, "\n") {
		t.Errorf("ratio lines:\n%s\nwant:\n%s", strings.Join(ratios, "\n"), strings.Join(want, "\n"))
	}
}
