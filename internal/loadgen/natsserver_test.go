//go:build natsbench

package loadgen

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Built with the natsbench tag, a run on the nats store starts its own
// server, with sync always if asked, and removes its folder afterwards.
func TestRunOnOwnNATSServer(t *testing.T) {
	before, _ := filepath.Glob(filepath.Join(os.TempDir(), "interlink-bench-nats-*"))
	for _, sync := range []bool{false, true} {
		rep, err := Run(t.Context(), Config{Store: StoreNATS, NATSSyncAlways: sync, Buses: 2, Mode: ModeWake, Duration: short}, nil)
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		if res := rep.Results[0]; res.Ops == 0 || res.Errors != 0 {
			t.Fatalf("%d ops, %d errors (%s)", res.Ops, res.Errors, res.FirstError)
		}
		if !strings.Contains(rep.Target, "a NATS server in this process") || strings.Contains(rep.Target, "sync always") != sync {
			t.Errorf("target %q", rep.Target)
		}
	}
	after, _ := filepath.Glob(filepath.Join(os.TempDir(), "interlink-bench-nats-*"))
	if len(after) > len(before) {
		t.Errorf("server folders left behind: %v", after)
	}
}
