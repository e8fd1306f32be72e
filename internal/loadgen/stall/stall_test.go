package stall

import (
	"runtime"
	"strconv"
	"testing"

	"github.com/interlink-go/interlink/internal/loadgen/measure"
	"github.com/interlink-go/interlink/internal/testutil"
)

// field returns the value of the result field key, or "".
func field(res measure.Result, key string) string {
	for _, f := range res.Extra {
		if f.Key == key {
			return f.Value
		}
	}
	return ""
}

// TestStallMeasuresEachKindAgainstABusOfItsOwn: the stall mode starts a
// bus for each kind, holds the connections open, and reports the bus's
// memory without and with them, and how many of them the bus holds: all
// of those stalled in a body, none of those whose headers it refused.
func TestStallMeasuresEachKindAgainstABusOfItsOwn(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts interlink-bus")
	}
	const conns = 8
	results, err := Run(t.Context(), Options{
		Conns:   conns,
		Kinds:   []string{"body", "hugeheader"},
		Command: []string{testutil.BuildBus(t)},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 2 {
		t.Fatalf("%d results, want one per kind:\n%v", len(results), results)
	}
	body, huge := results[0], results[1]
	if field(body, "kind") != "body" || body.Ops != conns || body.Errors != 0 {
		t.Errorf("body: %v", body)
	}
	if field(huge, "kind") != "hugeheader" {
		t.Errorf("hugeheader: %v", huge)
	}
	if runtime.GOOS != "linux" {
		return
	}
	if body.RSSBefore <= 0 || body.RSSAfter <= 0 || huge.RSSBefore <= 0 {
		t.Errorf("memory not read: %v, %v", body, huge)
	}
	if got := field(body, "bus_holds"); got != strconv.Itoa(conns) {
		t.Errorf("the bus holds %s of %d connections stalled in a body", got, conns)
	}
	if got := field(huge, "bus_holds"); got != "0" {
		t.Errorf("the bus holds %s connections whose headers are over its bound", got)
	}
}
