package agent_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/interlink-go/interlink/internal/agent"
	"github.com/interlink-go/interlink/internal/agent/agenttest"
	"github.com/interlink-go/interlink/internal/pairing"
	"github.com/interlink-go/interlink/internal/route"
)

// The handshake survives a restart of the accepting side, both before the
// decision and between the decision and the confirmation leaving: the
// queue is a file, and a saved confirmation older than a day is signed
// again when it finally goes out.
func TestPairingSurvivesRestartsOfTheAcceptingSide(t *testing.T) {
	url, sw := agenttest.StartSwitchableBus(t)
	alice, bob := agenttest.NewIdent(t), agenttest.NewIdent(t)
	a := agenttest.Start(t, alice, "a1", []string{url}, &agenttest.Options{Edit: func(c *agent.Config) { c.Name = "alice" }})
	bobRoot := t.TempDir()
	b := agenttest.Start(t, bob, "b1", []string{url}, &agenttest.Options{Root: bobRoot})
	agenttest.OnRoster(t, url, bob.Key(), "b1")

	first := a.OK("request_pair", map[string]any{"target": bob.Key()})
	b.WaitNotice("Pairing request")
	// Asking again keeps the request id.
	second := a.OK("request_pair", map[string]any{"target": bob.Key()})
	idOf := func(s string) string {
		_, r, _ := strings.Cut(s, "(request id ")
		id, _, _ := strings.Cut(r, ")")
		return id
	}
	if idOf(first) == "" || idOf(first) != idOf(second) {
		t.Errorf("request ids %q and %q, want the same", idOf(first), idOf(second))
	}
	b.Stop()

	// Restarted bob finds the request by fingerprint and key, and accepts
	// it a day in the past while no relay takes anything.
	sw.Set("/send", true)
	past := func() time.Time { return time.Now().Add(-25 * time.Hour) }
	b2 := agenttest.Start(t, bob, "b1", []string{url}, &agenttest.Options{Root: bobRoot, Edit: func(c *agent.Config) { c.Timing.Now = past }})
	if got := b2.OK("list_pair_requests", nil); !strings.Contains(got, alice.Key()) {
		t.Fatalf("after restart: %q", got)
	}
	b2.OK("accept_pair", map[string]any{"fingerprint": alice.Key()})
	agenttest.Eventually(t, "send attempts", func() bool { return sw.Count("/send") > 2 })
	b2.Stop()

	// Back to the present, relays working: the saved confirmation is signed
	// again with the current time and completes the pairing.
	sw.Set("/send", false)
	b3 := agenttest.Start(t, bob, "b1", []string{url}, &agenttest.Options{Root: bobRoot})
	a.WaitNotice("Paired with '" + bob.Key() + "'")
	if got := a.OK("list_peers", nil); got != bob.Key()+" → "+bob.Key() {
		t.Errorf("alice's peers = %q", got)
	}
	// The typed target (here the full key) is the petname; chat works.
	a.OK("send_message", map[string]any{"to": bob.Key(), "text": "paired across restarts"})
	b3.WaitText("receive_messages", nil, "paired across restarts")
}

// A queued job that this side would never have signed is dropped, and the
// jobs behind it still go out.
func TestPairSenderDropsAJobSignedByAnotherKey(t *testing.T) {
	url := agenttest.StartBus(t)
	alice, bob, eve := agenttest.NewIdent(t), agenttest.NewIdent(t), agenttest.NewIdent(t)
	b := agenttest.Start(t, bob, "b1", []string{url}, &agenttest.Options{Edit: func(c *agent.Config) { c.Name = "bob" }})
	a := agenttest.Start(t, alice, "a1", []string{url}, &agenttest.Options{Edit: func(c *agent.Config) { c.Name = "alice" }})
	agenttest.OnRoster(t, url, bob.Key(), "b1")
	// A job signed by eve, planted in alice's queue, ahead of her knock.
	tr := route.New(bob.Key(), "b1")
	bad, err := pairing.RequestMessage(eve.Signer, bob.Signer.Public(), tr, "eve", strings.Repeat("e", 32), route.New(eve.Key(), "e"), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(a.Root, "pairing", alice.Key(), "a1.json")
	data := fmt.Sprintf(`{"inbound":[],"outbound":[],"queued":[%s]}`, jobJSON(t, bad))
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	agenttest.WriteFile(t, path, data)
	a.OK("request_pair", map[string]any{"target": "bob"})
	n := b.WaitNotice("Pairing request")
	if !strings.Contains(n.Content, alice.Signer.Public().Fingerprint()) {
		t.Errorf("the knock that arrived is not alice's: %q", n.Content)
	}
	for _, r := range b.TextRecords() {
		if strings.Contains(r.Content, eve.Signer.Public().Fingerprint()) {
			t.Error("the planted job was sent")
		}
	}
	agenttest.Eventually(t, "the planted job dropped", func() bool { return strings.Contains(a.Logs.String(), "pairing job dropped") })
}

func jobJSON(t testing.TB, j pairing.Job) string {
	m, err := j.Msg.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf(`{"route":%q,"msg":%s}`, j.Route, m)
}
