package agent_test

import (
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/rogpeppe/go-internal/txtar"

	"github.com/interlink-go/interlink/internal/agent"
	"github.com/interlink-go/interlink/internal/agent/agenttest"
	"github.com/interlink-go/interlink/internal/bus/bustest"
	"github.com/interlink-go/interlink/internal/delivery"
	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/testutil"
)

var update = flag.Bool("update", false, "rewrite testdata/golden/*.txtar from what the tests see")

// checkGolden compares sections with the archive testdata/golden/<name>,
// section by section in order, and rewrites the archive with -update.
func checkGolden(t *testing.T, name, comment string, sections []txtar.File) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	got := &txtar.Archive{Comment: []byte(comment), Files: sections}
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, txtar.Format(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := txtar.ParseFile(path)
	if err != nil {
		t.Fatalf("%v (run the test with -update to write it)", err)
	}
	type section struct{ Name, Data string }
	flat := func(a *txtar.Archive) []section {
		out := make([]section, len(a.Files))
		for i, f := range a.Files {
			out[i] = section{f.Name, string(f.Data)}
		}
		return out
	}
	if diff := cmp.Diff(flat(want), flat(got)); diff != "" {
		t.Errorf("%s differs (-golden +now); a change of these texts is a decision: rerun with -update once it is made:\n%s", path, diff)
	}
}

// TestToolListGolden pins the server instructions and every tool's name,
// description and input schema as tools/list reports them: hosts and the
// model read them, so a change is a decision.
func TestToolListGolden(t *testing.T) {
	n := agenttest.Start(t, agenttest.NewIdent(t), "s1", []string{agenttest.StartBus(t)}, nil)
	tools := n.A.Tools()
	names := slices.Sorted(maps.Keys(tools))
	sections := []txtar.File{{Name: "instructions", Data: []byte(agent.Instructions + "\n")}}
	for _, name := range names {
		b, err := json.MarshalIndent(tools[name], "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		sections = append(sections, txtar.File{Name: name + ".json", Data: append(b, '\n')})
	}
	checkGolden(t, "tools.txtar", "The server instructions and tools/list, one section per tool.\n", sections)
}

// transcript records the texts a scenario shows the model, normalized so
// that they do not change from run to run: keys and fingerprints become
// the names of their identities, the relay's URL <relay>, message and request ids become <id-N>
// and notice ids <notice-N>, numbered in order of appearance.
type transcript struct {
	t        *testing.T
	names    map[string]string // key or fingerprint → placeholder
	ids      map[string]string
	notices  map[string]string
	sections []txtar.File
}

var hex32 = regexp.MustCompile(`\b[0-9a-f]{32}\b`)

func newTranscript(t *testing.T) *transcript {
	return &transcript{t: t, names: map[string]string{}, ids: map[string]string{}, notices: map[string]string{}}
}

// name makes id's key and fingerprint show as <who-key> and <who-fp>.
func (tr *transcript) name(id *agenttest.Ident, who string) {
	tr.names[id.Key()] = "<" + who + "-key>"
	tr.names[id.Signer.Public().Fingerprint()] = "<" + who + "-fp>"
}

// notice makes the notice id show as <notice-N>.
func (tr *transcript) notice(id string) {
	if _, ok := tr.notices[id]; !ok {
		tr.notices[id] = fmt.Sprintf("<notice-%d>", len(tr.notices)+1)
	}
}

// add records text under the section name.
func (tr *transcript) add(name, text string) {
	tr.t.Helper()
	// Keys before fingerprints: a fingerprint is the start of its key.
	for k, v := range tr.names {
		if len(k) > identity.FingerprintLen {
			text = strings.ReplaceAll(text, k, v)
		}
	}
	for k, v := range tr.names {
		if len(k) == identity.FingerprintLen {
			text = strings.ReplaceAll(text, k, v)
		}
	}
	text = hex32.ReplaceAllStringFunc(text, func(id string) string {
		if _, ok := tr.ids[id]; !ok {
			tr.ids[id] = fmt.Sprintf("<id-%d>", len(tr.ids)+1)
		}
		return tr.ids[id]
	})
	for k, v := range tr.notices {
		text = strings.ReplaceAll(text, k, v)
	}
	tr.sections = append(tr.sections, txtar.File{Name: fmt.Sprintf("%02d-%s", len(tr.sections)+1, name), Data: []byte(text + "\n")})
}

// sinkRecord returns the first record of the sink whose content starts with
// prefix, waiting for it.
func sinkRecord(t *testing.T, sink *delivery.Memory, prefix string) delivery.Record {
	t.Helper()
	var got delivery.Record
	agenttest.Eventually(t, "a sink record starting "+prefix, func() bool {
		for _, r := range sink.Records() {
			if strings.HasPrefix(r.Content, prefix) {
				got = r
				return true
			}
		}
		return false
	})
	return got
}

// noticeRecord renders a sink record as the host gets it.
func noticeRecord(r delivery.Record) string {
	return "sender: " + r.Sender + "\n" + r.Content
}

// TestTextsGolden pins the texts that scripts and users of the original
// match on: the results of send_message, cancel_task, message_status,
// list_pending, receive_messages (receipts and blocks) and
// acknowledge_messages, the answer when nothing is unread, the notices
// about waiting messages, the pairing notices and the goodbye. It runs a
// conversation between real agents over a real bus.
func TestTextsGolden(t *testing.T) {
	clk := bustest.NewClock()
	sw := agenttest.NewSwitchable()
	url := bustest.Start(t, &bustest.Options{Now: clk.Now, Wrap: sw.Wrap})
	alice, bob, carol, dave := agenttest.IdentFrom(t, 0xa1), agenttest.IdentFrom(t, 0xb2), agenttest.IdentFrom(t, 0xc3), agenttest.IdentFrom(t, 0xd4)
	alice.Admit(t, "bob", bob, "dave", dave)
	bob.Admit(t, "alice", alice)
	carol.Admit(t, "bob-desk", dave) // the name carol will give bob is taken
	tr := newTranscript(t)
	for who, id := range map[string]*agenttest.Ident{"alice": alice, "bob": bob, "carol": carol, "dave": dave} {
		tr.name(id, who)
	}
	tr.names[url] = "<relay>"
	// dave's only session was last seen two minutes ago.
	agenttest.Announce(t, url, dave, "d1")
	clk.Advance(2 * time.Minute)
	named := func(name string) *agenttest.Options {
		return &agenttest.Options{Edit: func(c *agent.Config) { c.Name = name }}
	}
	a := agenttest.Start(t, alice, "a1", []string{url}, named("alice-desk"))
	b := agenttest.Start(t, bob, "b1", []string{url}, named("bob-desk"))
	agenttest.OnRoster(t, url, alice.Key(), "a1")
	agenttest.OnRoster(t, url, bob.Key(), "b1")

	tr.add("receive-nothing-unread", b.OK("receive_messages", nil))

	// A message to a live session, from sending to acknowledging.
	sent := a.OK("send_message", map[string]any{"to": "bob", "text": "hello bob"})
	tr.add("send-live", sent)
	id := agenttest.MsgID(t, sent)
	notice := sinkRecord(t, b.Sink, "[Interlink inbox notice]")
	tr.notice(notice.MsgID)
	tr.add("inbox-notice", noticeRecord(notice))
	b.WaitText("message_status", map[string]any{"msg_id": id}, "[inbox_queued]")
	got := b.OK("receive_messages", map[string]any{"notification_id": notice.MsgID})
	tr.add("receive", got)
	tr.add("status-received", b.OK("message_status", map[string]any{"msg_id": id}))
	tr.add("status-sent", a.WaitText("message_status", map[string]any{"msg_id": id}, "[bus_accepted]"))
	receipts := testutil.Receipts(t, got)
	tr.add("acknowledge", b.OK("acknowledge_messages", map[string]any{"messages": []any{receipts[0]}}))
	tr.add("acknowledge-again", b.OK("acknowledge_messages", map[string]any{"messages": []any{receipts[0]}}))
	tr.add("status-acknowledged", b.OK("message_status", map[string]any{"msg_id": id}))
	tr.add("status-unknown", b.OK("message_status", map[string]any{"msg_id": "0123"}))
	tr.add("list-pending-nothing", a.OK("list_pending", nil))

	// A task: opened, a progress update in reply, a cancellation.
	open := a.OK("send_message", map[string]any{"to": "bob", "text": "please build", "task_id": "t1"})
	tr.add("send-task", open)
	b.WaitText("message_status", map[string]any{"msg_id": agenttest.MsgID(t, open)}, "[inbox_queued]")
	got = b.OK("receive_messages", nil)
	tr.add("receive-task", got)
	b.OK("acknowledge_messages", map[string]any{"messages": []any{testutil.Receipts(t, got)[0]}})
	tr.add("send-task-update", b.OK("send_message", map[string]any{"to": "alice", "text": "halfway",
		"task_id": "t1", "status": "update", "in_reply_to": agenttest.MsgID(t, open)}))
	tr.add("receive-progress", a.WaitText("receive_messages", nil, "halfway"))
	cancel := a.OK("cancel_task", map[string]any{"to": "bob", "task_id": "t1", "reason": "no longer needed"})
	tr.add("cancel-task", cancel)
	b.WaitText("message_status", map[string]any{"msg_id": agenttest.MsgID(t, cancel)}, "[inbox_queued]")
	got = b.OK("receive_messages", nil)
	tr.add("receive-cancel", got)
	b.OK("acknowledge_messages", map[string]any{"messages": []any{testutil.Receipts(t, got)[0]}})

	// Where the roster says the session is.
	tr.add("send-away", a.OK("send_message", map[string]any{"to": "dave", "text": "are you there?"}))
	tr.add("send-not-on-roster", a.OK("send_message", map[string]any{"to": "bob", "session": "zzz", "text": "anyone?"}))
	a.WaitText("list_pending", nil, "Nothing is waiting")
	blind, blinded := agenttest.StartSwitchableBus(t)
	blinded.Set("/roster", true)
	lone := agenttest.Start(t, alice, "a9", []string{blind}, nil)
	tr.add("send-no-roster", lone.OK("send_message", map[string]any{"to": "bob", "session": "b7", "text": "x"}))

	// No relay takes anything for a while.
	sw.Set("/send", true)
	pending := a.OK("send_message", map[string]any{"to": "bob", "text": "while the relay refuses"})
	tr.add("send-while-refused", pending)
	tr.add("list-pending", a.OK("list_pending", nil))
	tr.add("status-pending", a.OK("message_status", map[string]any{"msg_id": agenttest.MsgID(t, pending)}))
	sw.Set("/send", false)
	b.WaitText("receive_messages", nil, "while the relay refuses")
	sw.SetRefused("/send", true)
	refused := a.OK("send_message", map[string]any{"to": "bob", "text": "refused"})
	tr.add("status-rejected", a.WaitText("message_status", map[string]any{"msg_id": agenttest.MsgID(t, refused)}, "[rejected]"))
	tr.add("list-pending-rejected", a.OK("list_pending", nil))
	sw.SetRefused("/send", false)

	// Pairing: carol asks alice, who accepts; carol asks bob under a name
	// she already uses for someone else.
	c := agenttest.Start(t, carol, "c1", []string{url}, named("carol-laptop"))
	tr.add("request-pair", c.OK("request_pair", map[string]any{"target": "alice-desk"}))
	tr.add("knock-notice", noticeRecord(sinkRecord(t, a.Sink, "Pairing request")))
	tr.add("list-pair-requests", a.OK("list_pair_requests", nil))
	tr.add("accept-pair", a.OK("accept_pair", map[string]any{"fingerprint": carol.Signer.Public().Fingerprint()}))
	tr.add("paired-notice", noticeRecord(sinkRecord(t, c.Sink, "Paired with")))
	c.OK("request_pair", map[string]any{"target": "bob-desk"})
	sinkRecord(t, b.Sink, "Pairing request")
	b.OK("accept_pair", map[string]any{"fingerprint": carol.Signer.Public().Fingerprint()})
	tr.add("pair-conflict-notice", noticeRecord(sinkRecord(t, c.Sink, "Pairing could not complete")))
	tr.add("reject-pair-nothing", b.OK("reject_pair", map[string]any{"fingerprint": carol.Signer.Public().Fingerprint()}))

	// alice goes away: bob, who wrote to her last, hears of it.
	b.OK("acknowledge_messages", map[string]any{"messages": testutil.Receipts(t, b.OK("receive_messages", nil))})
	a.Stop()
	bye := testutil.Receipts(t, b.WaitText("receive_messages", nil, "shutting down"))
	tr.add("goodbye", b.WaitText("receive_messages", nil, "[inbox_queued]"))
	if len(bye) != 1 {
		t.Errorf("%d unread messages after the goodbye, want only the goodbye", len(bye))
	}

	checkGolden(t, "texts.txtar", "What the model reads in one conversation, in order. Keys, fingerprints and ids are\nreplaced by placeholders; everything else is byte for byte.\n", tr.sections)
}
