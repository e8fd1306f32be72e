package loadgen

import (
	"fmt"
	"io"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// Write prints rep: two header lines starting with "#" that say what ran
// where, one line per result, and for runs with a floor the ratio of each
// measurement to it (of ops/s, or for wake of the median latency).
//
//	roundtrip  ops=12000 ops/s=2400.0 p50=0.390ms p99=0.910ms p999=2.100ms max=4.200ms errors=0 rss_before=11.2MiB rss_after=13.0MiB senders=1 routes=1 reqs_per_op=3
func (rep *Report) Write(w io.Writer) error {
	c := rep.Config
	var b strings.Builder
	fmt.Fprintf(&b, "# mode=%s target=%q keepalive=%t size=%d duration=%v", c.Mode, rep.Target, c.KeepAlive, c.Size, c.Duration)
	if c.FillRoutes > 0 {
		fmt.Fprintf(&b, " fill=%dx%d", c.FillRoutes, c.FillMsgs)
	}
	if c.Latency > 0 {
		fmt.Fprintf(&b, " latency=%v", c.Latency)
	}
	if c.Rounds > 1 {
		fmt.Fprintf(&b, " rounds=%d", c.Rounds)
	}
	fmt.Fprintf(&b, "\n# machine: %s/%s, %d CPUs, %s\n", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version())
	for _, res := range rep.Results {
		b.WriteString(res.String())
		b.WriteByte('\n')
	}
	var measured []Result
	floors := map[string]Result{}
	for _, res := range rep.Results {
		switch res.Name {
		case wireFloorName:
			// Also set beside the floor: what the wire format alone
			// costs.
			floors[res.Name] = res
			measured = append(measured, res)
		case "floor", string(ModeBoltFloor):
			floors[res.Name] = res
		case string(ModeFill), string(ModeFull):
		default:
			measured = append(measured, res)
		}
	}
	for _, m := range measured {
		if m.Beside != "" {
			// A variant: set beside the plain measurement only.
			if p, ok := find(rep.Results, m.Beside); ok && p.OpsPerSec() > 0 {
				fmt.Fprintf(&b, "# %s/%s ops/s: %.2f\n", m.Name, p.Name, m.OpsPerSec()/p.OpsPerSec())
			}
			continue
		}
		for _, name := range []string{"floor", wireFloorName, string(ModeBoltFloor)} {
			f, ok := floors[name]
			switch {
			case !ok || f.OpsPerSec() == 0 || f.Latency.P50 == 0:
			case m.Name == wireFloorName && name != "floor":
			case m.Name == string(ModeWake):
				// Wake-ups are paced by the test, not by the bus:
				// compare how long one takes with one request.
				fmt.Fprintf(&b, "# %s/%s p50: %.2f\n", m.Name, name, float64(m.Latency.P50)/float64(f.Latency.P50))
			default:
				fmt.Fprintf(&b, "# %s/%s ops/s: %.2f\n", m.Name, name, m.OpsPerSec()/f.OpsPerSec())
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// find returns the result named name.
func find(results []Result, name string) (Result, bool) {
	for _, r := range results {
		if r.Name == name {
			return r, true
		}
	}
	return Result{}, false
}

// String formats r as one report line.
func (r Result) String() string {
	var b strings.Builder
	l := r.Latency
	fmt.Fprintf(&b, "%-10s ops=%d ops/s=%.1f p50=%s p99=%s p999=%s max=%s errors=%d",
		r.Name, r.Ops, r.OpsPerSec(), formatMillis(l.P50), formatMillis(l.P99), formatMillis(l.P999), formatMillis(l.Max), r.Errors)
	if r.RSSBefore != 0 || r.RSSAfter != 0 {
		fmt.Fprintf(&b, " rss_before=%s rss_after=%s", formatBytes(r.RSSBefore), formatBytes(r.RSSAfter))
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

// formatMillis prints d in milliseconds with microsecond precision.
func formatMillis(d time.Duration) string {
	return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 3, 64) + "ms"
}

// formatBytes prints n in MiB with one decimal, and a negative n (unknown)
// as n/a.
func formatBytes(n int64) string {
	if n < 0 {
		return "n/a"
	}
	return strconv.FormatFloat(float64(n)/(1<<20), 'f', 1, 64) + "MiB"
}
