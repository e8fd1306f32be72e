package bus

import (
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestDropLog checks the rate limit and the bound of the drop warning.
func TestDropLog(t *testing.T) {
	var d dropLog
	t0 := time.UnixMilli(testEpoch)
	step := func(route string, n int, at time.Time, want ...dropEvent) {
		t.Helper()
		got := d.note(route, n, at)
		if diff := cmp.Diff(want, got, cmp.AllowUnexported(dropEvent{})); diff != "" {
			t.Errorf("note(%q, %d) at +%v (-want +got):\n%s", route, n, at.Sub(t0), diff)
		}
	}

	// Once per route per second, with the drops counted in between.
	step("a", 1, t0, dropEvent{to: "a", dropped: 1})
	step("a", 2, t0.Add(500*time.Millisecond))
	step("a", 3, t0.Add(999*time.Millisecond))
	step("b", 1, t0.Add(999*time.Millisecond), dropEvent{to: "b", dropped: 1})
	step("a", 1, t0.Add(time.Second), dropEvent{to: "a", dropped: 6})
	// A clock that went back does not silence a route.
	step("a", 1, t0, dropEvent{to: "a", dropped: 1})

	// Fill the tracker; the next new route goes to the shared counter.
	d = dropLog{}
	for i := range dropLogRoutes {
		d.note("r"+strconv.Itoa(i), 1, t0)
	}
	d.note("r0", 4, t0) // pending, reported when r0 is pruned
	step("x", 2, t0, dropEvent{other: true, dropped: 2})
	step("y", 3, t0)
	if n := d.len(); n != dropLogRoutes {
		t.Fatalf("tracking %d routes, want %d", n, dropLogRoutes)
	}
	// A second later the old routes are pruned, and the drops still
	// pending for r0 and for untracked routes are reported.
	step("z", 1, t0.Add(time.Second),
		dropEvent{to: "r0", dropped: 4}, dropEvent{other: true, dropped: 3}, dropEvent{to: "z", dropped: 1})
	if n := d.len(); n != 1 {
		t.Errorf("tracking %d routes after the prune, want 1", n)
	}
	step("w", 1, t0.Add(2*time.Second), dropEvent{to: "w", dropped: 1})
}
