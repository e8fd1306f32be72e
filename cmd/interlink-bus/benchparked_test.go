package main

import (
	"strings"
	"testing"

	"github.com/interlink-go/interlink/internal/testutil"
)

// TestBenchParkedReportsEveryPollWokenOnce runs bench --mode parked
// against a bus binary of its own and checks its line: every poll parked
// and woken, none lost or delivered twice.
func TestBenchParkedReportsEveryPollWokenOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts interlink-bus")
	}
	code, out, errOut := runBench(t, "--mode", "parked", "--polls", "20", "--duration", "100ms", "--bus-bin", testutil.BuildBus(t))
	if code != exitOK {
		t.Fatalf("exit %d, stderr %s", code, errOut)
	}
	for _, want := range []string{"\nparked     ops=20 ", " errors=0 ", " polls=20 parked=20 ", " lost=0 duplicates=0 misrouted=0 "} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// TestBenchParkedFlagsStayWithTheirModes: --polls belongs to mode parked,
// --bus-bin to the modes that start a bus of their own.
func TestBenchParkedFlagsStayWithTheirModes(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--mode", "wake", "--polls", "10"}, "--polls applies to mode parked only"},
		{[]string{"--mode", "pipeline", "--bus-bin", "/bin/true"}, "--bus-bin applies to modes stall and parked only"},
		{[]string{"--mode", "parked", "--url", "http://127.0.0.1:1"}, "mode parked starts a bus process of its own"},
	} {
		code, _, errOut := runBench(t, tc.args...)
		if code != exitUsage || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, stderr %s", tc.args, code, errOut)
		}
	}
}
