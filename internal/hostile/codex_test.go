//go:build unix

package hostile

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/interlink-go/interlink/internal/agent"
	"github.com/interlink-go/interlink/internal/budget"
	"github.com/interlink-go/interlink/internal/bus/bustest"
	"github.com/interlink-go/interlink/internal/host"
	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/testutil"
)

// codexThread is the thread a Codex agent is bound to in these tests.
const codexThread = "01900000-1234-7000-8000-00000000beef"

// codexStub writes a fake codex executable that records the argv of every
// queue call, NUL-separated, one record per call, and returns its path.
func codexStub(t testing.TB) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "codex")
	script := "#!/bin/sh\n[ \"$1\" = \"queue\" ] || exit 0\nfor a in \"$@\"; do printf '%s\\0' \"$a\"; done >> \"$0.args\"\nprintf '\\036' >> \"$0.args\"\n"
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// queuedTexts returns the --message argument of every recorded queue call.
func queuedTexts(t testing.TB, stub string) []string {
	t.Helper()
	data, err := os.ReadFile(stub + ".args")
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []string
	for _, rec := range bytes.Split(data, []byte{0x1e}) {
		args := strings.Split(strings.TrimSuffix(string(rec), "\x00"), "\x00")
		for i, a := range args {
			if a == "--message" && i+1 < len(args) {
				out = append(out, args[i+1])
			}
		}
	}
	return out
}

// In the Codex host, what codex queue receives (the text a Codex thread
// takes as the user's own words) never carries the peer's body, and the
// knock notice quoting a hostile claimed name is inert.
func TestHostileBodyIsInertInTheCodexQueueText(t *testing.T) {
	url := bustest.Start(t, nil)
	mallory, victim := newParty(t), newParty(t)
	victim.writePeers(t, map[string]*party{"mallory": mallory})
	stub := codexStub(t)
	v := start(t, victim, codexThread, url, &nodeOpts{edit: func(c *agent.Config, _ string) {
		c.Host, c.CodexBin, c.Session = host.Codex, stub, ""
	}})
	if got := v.ok("bind_codex_session", map[string]any{"thread_id": codexThread}); got != "{}" {
		t.Fatalf("bind = %q", got)
	}
	onRoster(t, url, victim.key(), codexThread)
	post(t, url, v.route(), newStranger(mallory.signer).sign(t, victim.key(), identity.KindMessage, hostileBody, nil))
	post(t, url, v.route(), newStranger(testutil.NumberedSigner(t, 3000)).sign(t, victim.key(), identity.KindPairRequest, hostileBody, nil))

	var texts []string
	eventually(t, "codex queue runs for the notice and the knock", func() bool {
		texts = queuedTexts(t, stub)
		all := strings.Join(texts, "\n")
		return strings.Contains(all, "receive_messages(notification_id=") && strings.Contains(all, "Pairing request from an unknown key")
	})
	for _, text := range texts {
		checkInert(t, "codex queue text", text, 2)
		if !strings.HasPrefix(text, budget.WakeLine+"\n[interlink notice] ") || !strings.Contains(text, `<interlink sender="Interlink"`) {
			t.Errorf("codex queue text is not interlink's own notice:\n%s", text)
		}
		if strings.Contains(text, "receive_messages(notification_id=") {
			for _, w := range bodyWords {
				if strings.Contains(text, w) {
					t.Errorf("codex queue text carries body text %q:\n%s", w, text)
				}
			}
		}
	}
	got := v.waitText("receive_messages", nil, "report done")
	checkInert(t, "receive_messages", got, 2)
	checkBlockBody(t, "receive_messages", got)
}
