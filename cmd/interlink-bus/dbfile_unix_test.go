//go:build unix

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A database file other users can read is made private at start, with a
// warning that names it and its old mode.
func TestReadableDatabaseFileMadePrivate(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "bus.db")
	writeQueues(t, path, 10)
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	p := startBus(t, busEnv(), "--addr", "127.0.0.1:0", "--db", path)
	warned := logLines(p.logs.String(), "database file was readable by other users; its mode is now 0600")
	if len(warned) != 1 || !strings.Contains(warned[0], "level=WARN") ||
		!strings.Contains(warned[0], "db="+path) || !strings.Contains(warned[0], "was=-rw-r--r--") {
		t.Errorf("warning lines %q in:\n%s", warned, p.logs.String())
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if perm := fi.Mode().Perm(); perm != 0o600 {
		t.Errorf("mode %v, want 0600", perm)
	}
	if got := drain(t, p.base, "key03#s"); len(got) == 0 {
		t.Error("the queues did not survive")
	}
	p.stop(t)
}
