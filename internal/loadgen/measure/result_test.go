package measure

import (
	"testing"
	"time"

	"github.com/interlink-go/interlink/internal/loadgen/latency"
)

// TestResultLinePrintsItsFiguresInOrder: a result prints as one line,
// name padded, rates and latencies in milliseconds, memory in MiB (n/a
// when unknown), a sampled count only when samples were dropped, its
// extra fields in their order and the first error quoted.
func TestResultLinePrintsItsFiguresInOrder(t *testing.T) {
	r := Result{
		Name: "wake", Ops: 40, Errors: 1, FirstError: `refused "x"`, Elapsed: 2 * time.Second,
		Latency:   latency.Summary{Count: 40, Kept: 30, P50: 1500 * time.Microsecond, P99: 2 * time.Millisecond, P999: 3 * time.Millisecond, Max: 4 * time.Millisecond},
		RSSBefore: 3 << 20, RSSAfter: -1,
		Extra: []Field{{Key: "idle", Value: "5"}, {Key: "send_p50", Value: Millis(time.Millisecond)}},
	}
	want := `wake       ops=40 ops/s=20.0 p50=1.500ms p99=2.000ms p999=3.000ms max=4.000ms errors=1 rss_before=3.0MiB rss_after=n/a sampled=30 idle=5 send_p50=1.000ms first_error="refused \"x\""`
	if got := r.String(); got != want {
		t.Errorf("line:\n%s\nwant:\n%s", got, want)
	}
	if got := (Result{Name: "floor"}).String(); got != "floor      ops=0 ops/s=0.0 p50=0.000ms p99=0.000ms p999=0.000ms max=0.000ms errors=0" {
		t.Errorf("an empty result prints %q", got)
	}
}
