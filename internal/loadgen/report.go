package loadgen

import (
	"fmt"
	"io"
	"runtime"
	"strings"

	"github.com/interlink-go/interlink/internal/loadgen/measure"
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
	var measured []measure.Result
	floors := map[string]measure.Result{}
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
func find(results []measure.Result, name string) (measure.Result, bool) {
	for _, r := range results {
		if r.Name == name {
			return r, true
		}
	}
	return measure.Result{}, false
}
