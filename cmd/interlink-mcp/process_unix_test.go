//go:build unix

package main

import (
	"syscall"
	"testing"

	"github.com/interlink-go/interlink/internal/bus/bustest"
)

// SIGTERM ends the server with the same clean exit as closing stdin.
func TestServerSIGTERM(t *testing.T) {
	url := bustest.Start(t, nil)
	f := newAgentFiles(t)
	p := launchMCP(t, f.env(url, "INTERLINK_SESSION=s-term"))
	p.initialize()
	waitFor(t, "the session on the roster", func() bool { return onRoster(url, f.pubkey(), "s-term") })
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := p.wait(); code != 0 {
		t.Errorf("exit status %d\n%s", code, p.stderr.String())
	}
	if onRoster(url, f.pubkey(), "s-term") {
		t.Error("still on the roster after SIGTERM")
	}
}
