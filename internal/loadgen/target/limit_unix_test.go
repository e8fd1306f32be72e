//go:build unix

package target

import (
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

// TestRaiseFileLimitRaisesTheSoftLimitUpToTheHard: a soft limit below
// what a run needs is raised to it, for this process and those it starts
// afterwards, and never beyond the hard limit.
func TestRaiseFileLimitRaisesTheSoftLimitUpToTheHard(t *testing.T) {
	var orig syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &orig); err != nil {
		t.Skip(err)
	}
	if orig.Max < 2048 {
		t.Skipf("hard limit %d", orig.Max)
	}
	t.Cleanup(func() { syscall.Setrlimit(syscall.RLIMIT_NOFILE, &orig) })
	low := syscall.Rlimit{Cur: 1024, Max: orig.Max}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &low); err != nil {
		t.Skip(err)
	}
	soft, hard, ok := RaiseFileLimit(2000)
	if !ok || soft != 2000 || hard != uint64(orig.Max) {
		t.Errorf("raised to %d (hard %d, ok %v), want 2000 (hard %d)", soft, hard, ok, orig.Max)
	}
	// A process started now, as the bus is, has the raised limit.
	if sh, err := exec.LookPath("sh"); err == nil {
		out, err := exec.Command(sh, "-c", "ulimit -n").Output()
		if got := strings.TrimSpace(string(out)); err != nil || got != "2000" {
			t.Errorf("a child's limit: %q, %v; want 2000", got, err)
		}
	}
	soft, hard, _ = RaiseFileLimit(uint64(orig.Max) + 1)
	if soft != uint64(orig.Max) || hard != uint64(orig.Max) {
		t.Errorf("beyond the hard limit: soft %d, hard %d, want both %d", soft, hard, orig.Max)
	}
}
