package main

// An end-to-end test of the bus's group-committed acknowledgements: a real
// interlink-bus with a database file is killed with SIGKILL after an agent
// acknowledged a message whose acknowledgement was not committed yet. The
// restarted bus hands the message out again, and the agent drops it as a
// replay.

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/interlink-go/interlink/internal/relay"
	"github.com/interlink-go/interlink/internal/testutil"
)

// startBusBinary starts the bus at bin on addr with args, waits until it
// listens, and kills it at cleanup. It returns a function that kills it
// with SIGKILL and waits for it to exit.
func startBusBinary(t *testing.T, bin, addr string, args ...string) (kill func()) {
	t.Helper()
	// The port may linger for a moment after the last bus on it died: a
	// bus that exits before listening is started again.
	testutil.EventuallyNil(t, 10*time.Second, "interlink-bus to listen on "+addr, func() error {
		logs := &testutil.LockedBuffer{}
		cmd := exec.Command(bin, append([]string{"--addr", addr}, args...)...)
		cmd.Env = cleanEnv()
		cmd.Stdout, cmd.Stderr = logs, logs
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		t.Cleanup(func() { cmd.Process.Kill(); <-done })
		listening := false
		testutil.Eventually(t, 10*time.Second, "interlink-bus to listen or exit", func() bool {
			select {
			case <-done:
				return true
			default:
			}
			listening = strings.Contains(logs.String(), `msg="bus listening"`)
			return listening
		})
		if !listening {
			return fmt.Errorf("it exited before listening:\n%s", logs.String())
		}
		kill = func() { cmd.Process.Kill(); <-done }
		return nil
	})
	return kill
}

func TestAcknowledgedMessageBackAfterBusCrashIsDroppedAsReplay(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and restarts interlink-bus")
	}
	bin := testutil.BuildBus(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	url := "http://" + addr
	db := filepath.Join(t.TempDir(), "bus.db")
	// No acknowledgement is committed on its own before the kill.
	busArgs := []string{"--db", db, "--ack-delay", "1m"}
	killBus := startBusBinary(t, bin, addr, busArgs...)

	alice, bob := newAgentFiles(t), newAgentFiles(t)
	alice.admit(t, "bob", bob)
	bob.admit(t, "alice", alice)
	a := launchMCP(t, alice.env(url, "INTERLINK_SESSION=a1"))
	a.initialize()
	b := launchMCP(t, bob.env(url, "INTERLINK_SESSION=b1"))
	b.initialize()

	sent := a.ok("send_message", map[string]any{"to": "bob", "session": "b1", "text": "shown only once"})
	id := regexp.MustCompile(`\(msg_id ([^)]+)\)`).FindStringSubmatch(sent)
	if id == nil {
		t.Fatalf("send_message = %q", sent)
	}
	b.waitText("receive_messages", nil, "shown only once")

	// Bob's agent acknowledges the message on the bus once it is in its
	// mailbox; the bus then hides it, with the deletion not yet on disk.
	route := bob.pubkey() + "#b1"
	rc := relay.New(url, nil)
	testutil.Eventually(t, 20*time.Second, "the bus to hide the acknowledged message", func() bool {
		d, err := rc.Recv(context.Background(), route, 0)
		return err == nil && !d.HasMessage
	})

	killBus()
	startBusBinary(t, bin, addr, busArgs...)

	// The restarted bus has the message again; bob's agent takes it, drops
	// it as a replay and acknowledges it, so the queue empties.
	replayed := regexp.MustCompile(`msg="message dropped" .*reason=replay .*msg_id=` + regexp.QuoteMeta(id[1]))
	testutil.Eventually(t, 60*time.Second, "bob's agent to drop the redelivered message as a replay", func() bool {
		return replayed.MatchString(b.stderr.String())
	})
	testutil.Eventually(t, 20*time.Second, "the bus queue to empty again", func() bool {
		d, err := rc.Recv(context.Background(), route, 0)
		return err == nil && !d.HasMessage
	})
	got := b.ok("receive_messages", nil)
	if n := strings.Count(got, "shown only once"); n != 1 {
		t.Errorf("receive_messages shows the message %d times, want once:\n%s", n, got)
	}
	for _, p := range []*mcpProc{a, b} {
		if code := p.closeAndWait(); code != 0 {
			t.Errorf("exit status %d", code)
		}
	}
}
