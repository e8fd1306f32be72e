package doctor

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/interlink-go/interlink/internal/budget"
	"github.com/interlink-go/interlink/internal/host"
	"github.com/interlink-go/interlink/internal/inbox"
	"github.com/interlink-go/interlink/internal/testutil"
)

// only returns the checks with id.
func only(checks []Check, id string) []Check {
	var out []Check
	for _, c := range checks {
		if c.ID == id {
			out = append(out, c)
		}
	}
	return out
}

func TestListenerWarnsWhenNoticesWaitWithoutAListener(t *testing.T) {
	root := t.TempDir()
	cfg := Config{StateRoot: root, Session: "s1", Host: host.Claude}
	check := func() Check {
		t.Helper()
		var r report
		r.listener(cfg)
		cs := only(r.checks, "listener")
		if len(cs) != 1 {
			t.Fatalf("listener checks: %+v", r.checks)
		}
		return cs[0]
	}
	if c := check(); c.Status != OK || !strings.Contains(c.Detail, "no notice is pending") {
		t.Errorf("empty inbox, no listener: %+v", c)
	}
	if _, err := os.Stat(filepath.Join(root, "inbox")); !os.IsNotExist(err) {
		t.Fatalf("the check created the inbox folder: %v", err)
	}

	box, err := inbox.Open(root, "s1")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range []string{`{"sender":"Interlink","msg_id":"n1","content":"x"}`, `{"sender":"Interlink","msg_id":"n2","content":"y"}`} {
		if err := box.Append([]byte(l)); err != nil {
			t.Fatal(err)
		}
	}
	c := check()
	if c.Status != Warn || !strings.Contains(c.Detail, "2 notices are pending for session s1 and no listener waits") || c.Fix == "" {
		t.Errorf("pending notices, no listener: %+v", c)
	}

	release, ok, err := box.Listen()
	if err != nil || !ok {
		t.Fatalf("Listen: %v %v", ok, err)
	}
	defer release()
	if c := check(); c.Status != OK || !strings.Contains(c.Detail, "a listener waits for session s1 and 2 notices are pending") {
		t.Errorf("pending notices, a listener: %+v", c)
	}
}

func TestRunSkipsSessionChecksWithoutASession(t *testing.T) {
	dir := t.TempDir()
	checks := Run(t.Context(), Config{
		KeyPath:   filepath.Join(dir, "id.key"),
		PeersPath: filepath.Join(dir, "peers.json"),
		URLs:      []string{"not a url"},
		StateRoot: filepath.Join(dir, "state"),
	})
	for _, id := range []string{"listener", "mailbox", "roster", "relay"} {
		if cs := only(checks, id); len(cs) > 0 {
			t.Errorf("%s checked without what it needs: %+v", id, cs)
		}
	}
	if cs := only(checks, "relays"); len(cs) != 1 || cs[0].Status != Fail {
		t.Errorf("a bad relay URL: %+v", cs)
	}
	if !Failed(checks) {
		t.Error("Failed = false with a missing key")
	}
}

func TestBudgetsWarnOfAPausedPeer(t *testing.T) {
	root := t.TempDir()
	own := testutil.Signer(t, 1).Public()
	bob := budget.Peer{Key: testutil.Signer(t, 2).Public(), Name: "bob"}
	limit := budget.Limit{N: 2, Per: time.Hour}
	cfg := Config{StateRoot: root, Session: "s1", Wake: limit, Send: budget.Limit{}}
	check := func() Check {
		t.Helper()
		var r report
		r.budgets(cfg, own)
		if len(r.checks) != 1 {
			t.Fatalf("checks: %+v", r.checks)
		}
		return r.checks[0]
	}
	if c := check(); c.Status != OK {
		t.Errorf("nothing counted: %+v", c)
	}
	b, err := budget.Open(root, own, "s1", &budget.Options{Wake: limit})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := b.Woke(t.Context(), []budget.Peer{bob}); err != nil {
			t.Fatal(err)
		}
	}
	c := check()
	if c.Status != Warn || !strings.Contains(c.Detail, "wake-ups are paused for bob (since ") ||
		!strings.Contains(c.Fix, "interlink-mcp turn --session s1") {
		t.Errorf("a paused peer: %+v", c)
	}
	if err := budget.RecordTurn(root, "s1", time.Now()); err != nil {
		t.Fatal(err)
	}
	if c := check(); c.Status != OK {
		t.Errorf("after the operator's turn: %+v", c)
	}
}
