package measure

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/interlink-go/interlink/internal/loadgen/latency"
)

// Grace is how long workers get to return after a phase's deadline before
// the run gives up on them.
const Grace = 3 * time.Second

// ErrStuck reports workers that did not return within [Grace] after their
// deadline. It points at a bug, not at a slow bus.
var ErrStuck = errors.New("load workers did not stop after the deadline")

// Result is one measurement.
type Result struct {
	// Name says what was measured: a mode, "floor" or "boltfloor".
	Name string
	// Ops counts the operations completed inside the measurement window:
	// request cycles, delivered messages, wake-ups or commits, by mode.
	Ops int64
	// Errors counts failed operations.
	Errors int64
	// FirstError is the first failure's text, empty when there was none.
	FirstError string
	// Elapsed is the length of the measurement window.
	Elapsed time.Duration
	// Latency summarizes the per-operation latencies.
	Latency latency.Summary
	// RSSBefore and RSSAfter are the resident memory of the bus's process,
	// in bytes, around the measurement: 0 when not measured, -1 when this
	// system cannot tell.
	RSSBefore, RSSAfter int64
	// Extra holds mode-specific fields, in print order.
	Extra []Field
	// Beside names the result a variant is compared with; empty for
	// every other result.
	Beside string
}

// Field is a named value of a [Result].
type Field struct{ Key, Value string }

// OpsPerSec returns the completed operations per second of the window.
func (r Result) OpsPerSec() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Ops) / r.Elapsed.Seconds()
}

// String formats r as one report line.
func (r Result) String() string {
	var b strings.Builder
	l := r.Latency
	fmt.Fprintf(&b, "%-10s ops=%d ops/s=%.1f p50=%s p99=%s p999=%s max=%s errors=%d",
		r.Name, r.Ops, r.OpsPerSec(), Millis(l.P50), Millis(l.P99), Millis(l.P999), Millis(l.Max), r.Errors)
	if r.RSSBefore != 0 || r.RSSAfter != 0 {
		fmt.Fprintf(&b, " rss_before=%s rss_after=%s", Bytes(r.RSSBefore), Bytes(r.RSSAfter))
	}
	if l.Kept < int(l.Count) {
		fmt.Fprintf(&b, " sampled=%d", l.Kept)
	}
	for _, f := range r.Extra {
		fmt.Fprintf(&b, " %s=%s", f.Key, f.Value)
	}
	if r.FirstError != "" {
		fmt.Fprintf(&b, " first_error=%s", strconv.Quote(r.FirstError))
	}
	return b.String()
}

// Millis prints d in milliseconds with microsecond precision.
func Millis(d time.Duration) string {
	return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 3, 64) + "ms"
}

// Bytes prints n in MiB with one decimal, and a negative n (unknown) as
// n/a.
func Bytes(n int64) string {
	if n < 0 {
		return "n/a"
	}
	return strconv.FormatFloat(float64(n)/(1<<20), 'f', 1, 64) + "MiB"
}
