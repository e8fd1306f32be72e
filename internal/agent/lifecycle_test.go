package agent_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/interlink-go/interlink/internal/agent"
	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/relay"
)

func TestResolveSession(t *testing.T) {
	tests := []struct {
		explicit, claude string
		want             string
		err              bool
	}{
		{"flag", "claude", "flag", false},
		{"  padded ", "claude", "padded", false},
		{"", "claude-id", "claude-id", false},
		{"   ", " c ", "c", false},
		{"../x", "claude", "", true},
		{"", "a/b", "", true},
	}
	for _, tt := range tests {
		got, err := agent.ResolveSession(tt.explicit, tt.claude)
		if (err != nil) != tt.err || got != tt.want {
			t.Errorf("ResolveSession(%q, %q) = %q, %v; want %q, error %v", tt.explicit, tt.claude, got, err, tt.want, tt.err)
		}
	}
	a, err := agent.ResolveSession("", "")
	b, err2 := agent.ResolveSession(" ", "\t")
	if err != nil || err2 != nil || len(a) != 8 || len(b) != 8 || a == b || strings.Trim(a, "0123456789abcdef") != "" {
		t.Errorf("generated ids %q, %q (%v, %v); want two different 8-hex ids", a, b, err, err2)
	}
}

// Item 2 (library half): a missing key or peers file fails New.
func TestNewFailures(t *testing.T) {
	id := newIdent(t)
	base := agent.Config{KeyPath: id.keyPath, PeersPath: id.peersPath, URLs: []string{"http://127.0.0.1:1"},
		Session: "s1", StateRoot: t.TempDir()}
	tests := []struct {
		name string
		edit func(*agent.Config)
		want string
	}{
		{"missing key", func(c *agent.Config) { c.KeyPath = filepath.Join(t.TempDir(), "none") }, "--key / INTERLINK_KEY"},
		{"missing peers", func(c *agent.Config) { c.PeersPath = filepath.Join(t.TempDir(), "none") }, "--peers / INTERLINK_PEERS"},
		{"https relay", func(c *agent.Config) { c.URLs = []string{"https://relay.example"} }, "--url / INTERLINK_URL"},
		{"bad session", func(c *agent.Config) { c.Session = ".." }, "session id"},
		{"unknown host", func(c *agent.Config) { c.Host = "vim" }, `host "vim"`},
	}
	for _, tt := range tests {
		cfg := base
		tt.edit(&cfg)
		if _, err := agent.New(cfg); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err = %v, want it to mention %q", tt.name, err, tt.want)
		}
	}
	bad := filepath.Join(t.TempDir(), "peers.json")
	writeFile(t, bad, "{not json")
	cfg := base
	cfg.PeersPath = bad
	if _, err := agent.New(cfg); err == nil {
		t.Error("a peers.json that does not parse was accepted")
	}
}

// Items 5 and 6: the session is announced at once with its working folder
// and git label, set_summary re-announces, and Stop takes the session off
// the roster for good.
func TestPresence(t *testing.T) {
	url := startBus(t)
	alice, bob := pair(t)
	repo := filepath.Join(t.TempDir(), "myrepo")
	if err := os.MkdirAll(filepath.Join(repo, ".git"), 0o700); err != nil {
		t.Fatal(err)
	}
	a := start(t, alice, "a1", []string{url}, &nodeOpts{edit: func(c *agent.Config) {
		c.Cwd = filepath.Join(repo, "sub")
		c.Timing.Announce = time.Hour // only the first announcement and set_summary
	}})
	b := start(t, bob, "b1", []string{url}, nil)
	onRoster(t, url, alice.key(), "a1")
	got := b.ok("discover", map[string]any{"peer": "alice"})
	if !strings.Contains(got, "→ a1 · "+filepath.Join(repo, "sub")+" · git:myrepo") || !strings.Contains(got, "already a peer") {
		t.Errorf("discover = %q", got)
	}
	if res := a.ok("set_summary", map[string]any{"summary": "  fixing the parser "}); !strings.Contains(res, `"fixing the parser"`) ||
		!strings.Contains(res, "shows in discover once a relay has it") {
		t.Errorf("set_summary = %q", res)
	}
	b.waitText("discover", map[string]any{"peer": "alice"}, `git:myrepo · "fixing the parser"`)

	a.stop()
	if rosterHas(t, url, alice.key(), "a1") {
		t.Fatal("still on the roster after Stop")
	}
	time.Sleep(3 * fastTiming().Announce)
	if rosterHas(t, url, alice.key(), "a1") {
		t.Error("back on the roster after Stop: a heartbeat outlived the unregister")
	}
}

// Item 7: goodbyes go to the sessions that wrote last, and never hold up the
// shutdown when no relay answers.
func TestGoodbye(t *testing.T) {
	url := startBus(t)
	alice, bob := pair(t)
	a := start(t, alice, "a1", []string{url}, nil)
	b := start(t, bob, "b1", []string{url}, nil)
	onRoster(t, url, alice.key(), "a1")
	b.ok("send_message", map[string]any{"to": "alice", "text": "hi"})
	a.waitText("receive_messages", nil, "hi")
	a.waitSticky(bob, "b1")
	a.stop()
	got := b.waitText("receive_messages", nil, "a1")
	if !strings.Contains(got, `sender="alice"`) || !strings.Contains(got, "shutting down") {
		t.Errorf("goodbye = %q", got)
	}

	// Unreachable relay: Stop still returns promptly.
	c := start(t, alice, "a2", []string{"http://127.0.0.1:1"}, nil)
	t0 := time.Now()
	c.stop()
	if d := time.Since(t0); d > 8*time.Second {
		t.Errorf("Stop took %v with the relay down", d)
	}
}

// Item 44: discover.
func TestDiscover(t *testing.T) {
	good := startBus(t)
	good2 := startBus(t)
	alice, bob := pair(t)
	carol := newIdent(t)
	alice.admit(t, "bob", bob)
	a := start(t, alice, "a1", []string{good}, nil)
	for _, u := range []string{good, good2} {
		announce(t, u, bob, "b1")
	}
	announceAs(t, good, carol, "carol", "c1")
	// A forged entry: carol's announcement edited to claim another session.
	forge := carol.signer.Announce("carol", identity.SessionInfo{SessionID: "c1"}, identity.Millis(time.Now()))
	forge.Session.SessionID = "c-forged"
	if err := relay.New(good, nil).Announce(context.Background(), forge); err != nil {
		t.Fatal(err)
	}
	onRoster(t, good, alice.key(), "a1")

	// All relays failing, each way.
	dead := "http://127.0.0.1:1"
	url503, sw := startSwitchableBus(t)
	sw.set("/roster", true)
	bad := start(t, alice, "x1", []string{dead, url503, fakeRoster(t, "not json"), fakeRoster(t, `{"roster":7}`)}, nil)
	text, isErr := bad.call("discover", nil)
	if !isErr || !strings.HasPrefix(text, "Discovery unavailable") {
		t.Errorf("all failing: isError %v, %q", isErr, text)
	}
	for _, w := range []string{dead, "roster request failed", "503", "invalid roster JSON", "expected a roster array"} {
		if !strings.Contains(text, w) {
			t.Errorf("all-failing discover lacks %q:\n%s", w, text)
		}
	}

	// One good relay and one bad: a result with a warning.
	mixed := start(t, alice, "m1", []string{good, good2, url503}, nil)
	onRoster(t, good, alice.key(), "m1")
	got := mixed.ok("discover", nil)
	if !strings.Contains(got, "Warning:") || !strings.Contains(got, "results may be incomplete") || !strings.Contains(got, url503) {
		t.Errorf("mixed discover lacks the warning:\n%s", got)
	}
	if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(bob.signer.Public().Fingerprint()+"…") + `(  \[[^\n]*\])?\n    key: `).MatchString(got) {
		t.Errorf("a nameless identity is not headed by its fingerprint:\n%s", got)
	}
	if strings.Count(got, "→ b1") != 1 {
		t.Errorf("bob's session shown %d times, want once:\n%s", strings.Count(got, "→ b1"), got)
	}
	if strings.Contains(got, "c-forged") {
		t.Errorf("forged entry shown:\n%s", got)
	}
	if !strings.Contains(got, "← this session") || !strings.Contains(got, "[you]") {
		t.Errorf("own session not marked:\n%s", got)
	}
	// Clean result: no warning.
	if got := a.ok("discover", nil); strings.Contains(got, "Warning") {
		t.Errorf("clean discover has a warning:\n%s", got)
	}
	// Filters.
	fp := carol.signer.Public().Fingerprint()
	for _, f := range []string{"bob", bob.key(), bob.signer.Public().Fingerprint()} {
		got := a.ok("discover", map[string]any{"peer": f})
		if !strings.Contains(got, "key: "+bob.key()) || strings.Contains(got, carol.key()) {
			t.Errorf("discover(%q) = %q", f, got)
		}
	}
	for _, f := range []string{"carol", fp} {
		got := a.ok("discover", map[string]any{"peer": f})
		if !strings.Contains(got, "key: "+carol.key()) || strings.Contains(got, bob.key()) {
			t.Errorf("discover(%q) = %q", f, got)
		}
	}
	if got := a.rpcErr("discover", map[string]any{"peer": "nobody"}); !strings.Contains(got, "nobody") {
		t.Errorf("unknown filter error = %q", got)
	}
}

// fakeRoster serves body as the answer to every request.
func fakeRoster(t testing.TB, body string) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// A message sent right before the session ends still reaches a relay.
func TestStopDrainsOutbox(t *testing.T) {
	url, sw := startSwitchableBus(t)
	alice, bob := pair(t)
	b := start(t, bob, "b1", []string{url}, nil)
	onRoster(t, url, bob.key(), "b1")
	a := start(t, alice, "a1", []string{url}, &nodeOpts{edit: func(c *agent.Config) { c.Timing.Retry = 200 * time.Millisecond }})
	sw.set("/send", true) // the first attempt fails; the retry comes during Stop
	a.ok("send_message", map[string]any{"to": "bob", "text": "last words"})
	go func() {
		time.Sleep(300 * time.Millisecond)
		sw.set("/send", false)
	}()
	a.stop()
	b.waitText("receive_messages", nil, "last words")

	// With every relay down, Stop gives up after DrainTimeout and keeps the
	// message; the next process of the session sends it.
	root := t.TempDir()
	c := start(t, alice, "a2", []string{"http://127.0.0.1:1"}, &nodeOpts{root: root})
	c.ok("send_message", map[string]any{"to": "bob", "session": "b1", "text": "kept"})
	t0 := time.Now()
	c.stop()
	if d := time.Since(t0); d > agent.StopTimeout+5*time.Second {
		t.Errorf("Stop took %v", d)
	}
	if !strings.Contains(c.logs.String(), "the next process of this session sends them") {
		t.Errorf("no note about the messages left in the outbox:\n%s", c.logs.String())
	}
	next := start(t, alice, "a2", []string{url}, &nodeOpts{root: root})
	b.waitText("receive_messages", nil, "kept")
	if got := next.ok("list_pending", nil); !strings.HasPrefix(got, "Nothing is waiting") {
		t.Errorf("list_pending after the next process sent it: %q", got)
	}
}

// Cancelling the parent context, as a signal does, drains the outbox just
// as Stop does: the workers keep running, so a relay that comes back
// within the grace period gets the message from the stopping agent. The
// normal retry interval is an hour, so only the drain can have sent it.
func TestCancelledParentDrainsTheOutbox(t *testing.T) {
	url, sw := startSwitchableBus(t)
	alice, bob := pair(t)
	b := start(t, bob, "b1", []string{url}, nil)
	onRoster(t, url, bob.key(), "b1")
	parent, cancel := context.WithCancel(context.Background())
	defer cancel()
	a := start(t, alice, "a1", []string{url}, &nodeOpts{ctx: parent, edit: func(c *agent.Config) { c.Timing.Retry = time.Hour }})
	sw.set("/send", true)
	before := sw.count("/send")
	a.ok("send_message", map[string]any{"to": "bob", "text": "said as the signal came"})
	eventually(t, "the first attempt refused", func() bool { return sw.count("/send") > before })

	cancel()
	// The relay comes back a moment later, well inside the grace period.
	time.Sleep(300 * time.Millisecond)
	sw.set("/send", false)
	b.waitText("receive_messages", nil, "said as the signal came")
	a.a.Stop() // returns once the shutdown the cancellation started is over
	if rosterHas(t, url, alice.key(), "a1") {
		t.Error("still on the roster after the shutdown")
	}
}

// A sender that cannot write its outbox (a full or broken disk) refuses
// the message: the call fails with a local-state error and nothing is
// sent, so no confirmed message can be lost.
func TestUnwritableOutboxRefusesTheMessage(t *testing.T) {
	url, sw := startSwitchableBus(t)
	alice, _ := pair(t)
	root := t.TempDir()
	// A file where the outbox folder belongs: nothing can be written under
	// it, even by root.
	if err := os.WriteFile(filepath.Join(root, "outbox"), []byte("in the way"), 0o600); err != nil {
		t.Fatal(err)
	}
	a := start(t, alice, "a1", []string{url}, &nodeOpts{root: root})
	before := sw.count("/send")
	got := a.rpcErr("send_message", map[string]any{"to": "bob", "session": "b1", "text": "nowhere to keep it"})
	if !strings.Contains(got, "local state: outbox") {
		t.Errorf("send_message = %q, want a local-state error", got)
	}
	if got := a.rpcErr("list_pending", nil); !strings.Contains(got, "local state: outbox") {
		t.Errorf("list_pending = %q, want the same error", got)
	}
	a.stop()
	if n := sw.count("/send") - before; n != 0 {
		t.Errorf("%d sends of a message the call refused", n)
	}
}
