//go:build unix

package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/interlink-go/interlink/internal/setup"
)

// A listener whose host went away ends by itself without consuming
// anything: here its parent shell is killed, so it is adopted.
func TestWaitEndsWhenOrphaned(t *testing.T) {
	f := newAgentFiles(t)
	bin, err := exec.LookPath("interlink-mcp")
	if err != nil {
		t.Fatal(err)
	}
	pidFile := filepath.Join(t.TempDir(), "pid")
	// sh starts the listener in the background and waits; killing sh
	// orphans the listener.
	sh := exec.Command("sh", "-c", setup.ShellQuote(bin)+` wait --session orphan --renew-after-secs 60 & echo $! > `+setup.ShellQuote(pidFile)+`; wait`)
	sh.Env = f.env("http://127.0.0.1:1")
	if err := sh.Start(); err != nil {
		t.Fatal(err)
	}
	var pid int
	waitFor(t, "the listener's pid", func() bool {
		data, _ := os.ReadFile(pidFile)
		pid, _ = strconv.Atoi(strings.TrimSpace(string(data)))
		return pid > 0
	})
	waitListening(t, f.state, "orphan")
	_ = sh.Process.Kill()
	_ = sh.Wait()
	waitFor(t, "the orphaned listener to end", func() bool {
		return gone(pid)
	})
	// The lock is free again: a new listener takes it (and renews).
	if r := runWaitProcess(t, f.env("http://127.0.0.1:1"), "", "--session", "orphan", "--renew-after-secs", "1"); r.code != 2 {
		t.Errorf("new listener after the orphan: %+v", r)
	}
}

// gone reports whether process pid has ended. A zombie counts as ended:
// whoever adopted it reaps it later.
func gone(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil {
		return true
	}
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(data, ')')
	return i >= 0 && i+2 < len(data) && data[i+2] == 'Z'
}
