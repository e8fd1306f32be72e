package docsteps

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// portWait bounds how long a walkthrough that must share the machine's
// network waits for a port the documents use, say while another run of
// this test holds it.
const portWait = 90 * time.Second

// waitForPort waits until 127.0.0.1:port is free, and fails the test with
// a line naming what holds it if it does not become free within portWait.
func waitForPort(t *testing.T, port int) {
	t.Helper()
	if err := portFree(t.Context(), port, portWait, t.Logf); err != nil {
		t.Fatal(err)
	}
}

// portFree waits up to wait for 127.0.0.1:port to be free. If it stays
// taken, the error says what holds it. logf hears once that it waits.
func portFree(ctx context.Context, port int, wait time.Duration, logf func(string, ...any)) error {
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	deadline := time.Now().Add(wait)
	logged := false
	for {
		ln, err := net.Listen("tcp", addr)
		if err == nil {
			ln.Close()
			return nil
		}
		if !time.Now().Before(deadline) {
			return fmt.Errorf("docsteps: port %s, which the documents use, is held by %s; stop it and run the test again", addr, portHolder(port))
		}
		if !logged {
			logf("docsteps: port %s is held by %s; waiting up to %v for it", addr, portHolder(port), wait)
			logged = true
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("docsteps: stopped while waiting for port %s: %w", addr, ctx.Err())
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// portHolder names the process listening on TCP port on this machine, as
// "process 123 (interlink-bus --addr 127.0.0.1:9440)", from /proc. Where
// it cannot tell (no /proc, another user's process), it says so.
func portHolder(port int) string {
	inodes := map[string]bool{}
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		f, err := os.Open(table)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			// sl local_address rem_address st ... uid timeout inode
			fields := strings.Fields(sc.Text())
			if len(fields) < 10 || fields[3] != "0A" { // 0A: LISTEN
				continue
			}
			_, hexPort, ok := strings.Cut(fields[1], ":")
			if p, err := strconv.ParseUint(hexPort, 16, 16); ok && err == nil && int(p) == port {
				inodes["socket:["+fields[9]+"]"] = true
			}
		}
		f.Close()
	}
	if len(inodes) == 0 {
		return "another program (this system does not say which)"
	}
	procs, _ := filepath.Glob("/proc/[0-9]*/fd/*")
	for _, fd := range procs {
		if target, err := os.Readlink(fd); err == nil && inodes[target] {
			pid := strings.Split(fd, "/")[2]
			cmdline, _ := os.ReadFile(filepath.Join("/proc", pid, "cmdline"))
			return fmt.Sprintf("process %s (%s)", pid, strings.TrimSpace(strings.ReplaceAll(string(cmdline), "\x00", " ")))
		}
	}
	return "a process this user cannot see"
}

// A port that stays taken fails the walkthrough with a line naming the
// process that holds it and its command line; a free one passes.
func TestTakenPortNamesItsHolder(t *testing.T) {
	if _, err := os.Stat("/proc/net/tcp"); err != nil {
		t.Skip("no /proc/net/tcp here")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	err = portFree(t.Context(), port, 0, t.Logf)
	want := fmt.Sprintf("is held by process %d (%s", os.Getpid(), os.Args[0])
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("portFree on a taken port: %v; want an error containing %q", err, want)
	}
	ln.Close()
	if err := portFree(t.Context(), port, 0, t.Logf); err != nil {
		t.Errorf("portFree on a free port: %v", err)
	}
}
