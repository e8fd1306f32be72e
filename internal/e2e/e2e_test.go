package e2e

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/txtar"

	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/testutil"
)

// TestReceiptVectorBodyIsTheGoldenOne checks the receipt vector (whose
// signature identity's golden test checks byte for byte): its text is what
// EncodeBody writes for its entries, and decodes back to them.
func TestReceiptVectorBodyIsTheGoldenOne(t *testing.T) {
	ar, err := txtar.ParseFile("../../testdata/vectors/receipt-a.txtar")
	if err != nil {
		t.Fatal(err)
	}
	var raw []byte
	for _, f := range ar.Files {
		if f.Name == "message.json" {
			raw = f.Data
		}
	}
	m, err := identity.DecodeMessage(raw)
	if err != nil {
		t.Fatal(err)
	}
	if m.Kind != identity.KindReceipt {
		t.Fatalf("kind = %q", m.Kind)
	}
	if _, err := m.Verify(); err != nil {
		t.Fatal(err)
	}
	want := []Entry{{MsgID: "m1", Stage: Stored, TS: 1700000000100}, {MsgID: "m2", Stage: Surfaced, TS: 1700000000200}}
	got, err := DecodeBody(m.Text)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("entries = %+v, want %+v", got, want)
	}
	text, err := EncodeBody(want)
	if err != nil || text != m.Text {
		t.Errorf("EncodeBody = %q, %v; want the vector's text %q", text, err, m.Text)
	}
	// The same body signed as an ordinary message is another signature:
	// the kind is signed.
	asMsg := m
	asMsg.Kind = identity.KindMessage
	if _, err := asMsg.Verify(); !errors.Is(err, identity.ErrSignature) {
		t.Errorf("receipt relabelled as a message verified: %v", err)
	}
}

func TestDecodeBodyRefusesWhatIsNotABody(t *testing.T) {
	long := strings.Repeat("x", identity.MaxReceivedMsgID+1)
	many := `{"receipts":[` + strings.Repeat(`{"msg_id":"a","stage":"receiver_stored","ts":1},`, MaxEntries) +
		`{"msg_id":"a","stage":"receiver_stored","ts":1}]}`
	for name, text := range map[string]string{
		"empty text":     "",
		"not json":       "hello",
		"no list":        `{}`,
		"empty list":     `{"receipts":[]}`,
		"null list":      `{"receipts":null}`,
		"missing ts":     `{"receipts":[{"msg_id":"a","stage":"receiver_stored"}]}`,
		"string ts":      `{"receipts":[{"msg_id":"a","stage":"receiver_stored","ts":"1"}]}`,
		"negative ts":    `{"receipts":[{"msg_id":"a","stage":"receiver_stored","ts":-1}]}`,
		"fraction ts":    `{"receipts":[{"msg_id":"a","stage":"receiver_stored","ts":1.5}]}`,
		"empty msg_id":   `{"receipts":[{"msg_id":"","stage":"receiver_stored","ts":1}]}`,
		"long msg_id":    `{"receipts":[{"msg_id":"` + long + `","stage":"receiver_stored","ts":1}]}`,
		"number stage":   `{"receipts":[{"msg_id":"a","stage":2,"ts":1}]}`,
		"too many":       many,
		"list of number": `{"receipts":[1]}`,
	} {
		if got, err := DecodeBody(text); !errors.Is(err, ErrBody) {
			t.Errorf("%s: DecodeBody = %v, %v; want ErrBody", name, got, err)
		}
	}
	// A stage of a later version is left out; the rest stands.
	got, err := DecodeBody(`{"receipts":[{"msg_id":"a","stage":"receiver_pondered","ts":1},{"msg_id":"b","stage":"receiver_acknowledged","ts":2}]}`)
	if err != nil || len(got) != 1 || got[0] != (Entry{MsgID: "b", Stage: Acknowledged, TS: 2}) {
		t.Errorf("unknown stage: %+v, %v", got, err)
	}
}

func TestEncodeBodyRefusesNoEntriesTooManyAndNoStage(t *testing.T) {
	if _, err := EncodeBody(nil); !errors.Is(err, ErrBody) {
		t.Errorf("no entries: %v", err)
	}
	if _, err := EncodeBody(make([]Entry, MaxEntries+1)); !errors.Is(err, ErrBody) {
		t.Errorf("too many: %v", err)
	}
	if _, err := EncodeBody([]Entry{{MsgID: "a"}}); !errors.Is(err, ErrBody) {
		t.Errorf("no stage: %v", err)
	}
}

func newOwed(t *testing.T) *Owed {
	t.Helper()
	o, err := OpenOwed(t.TempDir(), testutil.Signer(t, 1).Public(), "s1", nil)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// Stages of one sender's messages go in one batch per route, only the
// furthest of each message, and each is sent once.
func TestOwedFlushBatchesPerSenderAndSendsEachStageOnce(t *testing.T) {
	ctx := context.Background()
	o := newOwed(t)
	bob, carol := testutil.Signer(t, 2).Public().String(), testutil.Signer(t, 3).Public().String()
	note := func(sender, id string, st Stage, create bool) {
		t.Helper()
		if _, err := o.Note(ctx, sender, id, sender+"#b1", st, create); err != nil {
			t.Fatal(err)
		}
	}
	note(bob, "m1", Stored, true)
	note(bob, "m2", Stored, true)
	note(bob, "m1", Surfaced, false)
	note(carol, "m3", Stored, true)
	note(carol, "unknown", Surfaced, false) // nobody is owed this one
	var got []Batch
	n, err := o.Flush(ctx, nil, func(b Batch) error { got = append(got, b); return nil })
	if err != nil || n != 2 || len(got) != 2 {
		t.Fatalf("flush: %d, %v, %+v", n, err, got)
	}
	if got[0].To != bob || len(got[0].Entries) != 2 || got[0].Entries[0].Stage != Surfaced || got[0].Entries[1].Stage != Stored {
		t.Errorf("bob's batch = %+v", got[0])
	}
	if got[1].To != carol || len(got[1].Entries) != 1 || got[1].Entries[0].MsgID != "m3" {
		t.Errorf("carol's batch = %+v", got[1])
	}
	if n, _ := o.Flush(ctx, nil, func(Batch) error { t.Error("sent again"); return nil }); n != 0 {
		t.Errorf("second flush sent %d", n)
	}
	// A stored copy again changes nothing; a later stage is owed again.
	note(bob, "m1", Stored, true)
	note(bob, "m2", Acknowledged, false)
	got = nil
	if _, err := o.Flush(ctx, nil, func(b Batch) error { got = append(got, b); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || len(got[0].Entries) != 1 || got[0].Entries[0].MsgID != "m2" || got[0].Entries[0].Stage != Acknowledged {
		t.Errorf("third flush = %+v", got)
	}
}

// A failed send keeps the stage owed, and a file opened anew (a restart)
// still owes it.
func TestOwedStageSurvivesAFailedSendAndAReopen(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	own := testutil.Signer(t, 1).Public()
	o, _ := OpenOwed(root, own, "s1", nil)
	bob := testutil.Signer(t, 2).Public().String()
	if _, err := o.Note(ctx, bob, "m1", bob, Stored, true); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("outbox full")
	if _, err := o.Flush(ctx, nil, func(Batch) error { return boom }); !errors.Is(err, boom) {
		t.Fatalf("flush error = %v", err)
	}
	o2, _ := OpenOwed(root, own, "s1", nil)
	var got []Batch
	if _, err := o2.Flush(ctx, nil, func(b Batch) error { got = append(got, b); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Entries[0].MsgID != "m1" {
		t.Errorf("after reopen = %+v", got)
	}
}

// Stages owed to a key that does not take receipts are forgotten unsent.
func TestOwedFlushForgetsSendersThatTakeNoReceipts(t *testing.T) {
	ctx := context.Background()
	o := newOwed(t)
	bob := testutil.Signer(t, 2).Public().String()
	if _, err := o.Note(ctx, bob, "m1", bob, Stored, true); err != nil {
		t.Fatal(err)
	}
	n, err := o.Flush(ctx, &FlushOptions{Keep: func(string) bool { return false }}, func(Batch) error { t.Error("sent"); return nil })
	if err != nil || n != 0 {
		t.Fatalf("flush = %d, %v", n, err)
	}
	if s, _ := o.Senders(); len(s) != 0 {
		t.Errorf("still owed to %v", s)
	}
}

func TestOwedFlushSplitsBatchesAtMaxEntries(t *testing.T) {
	ctx := context.Background()
	o := newOwed(t)
	bob := testutil.Signer(t, 2).Public().String()
	for i := range MaxEntries + 1 {
		if _, err := o.Note(ctx, bob, "m"+string(rune('a'+i%26))+strings.Repeat("x", i/26), bob, Stored, true); err != nil {
			t.Fatal(err)
		}
	}
	var sizes []int
	if _, err := o.Flush(ctx, nil, func(b Batch) error { sizes = append(sizes, len(b.Entries)); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(sizes) != 2 || sizes[0] != MaxEntries || sizes[1] != 1 {
		t.Errorf("batch sizes = %v", sizes)
	}
}

// Apply keeps the furthest stage of messages this session sent to the
// signer, and drops, by reason, entries about anything else.
func TestHeardKeepsFurthestStageAndDropsEntriesItCannotVouchFor(t *testing.T) {
	ctx := context.Background()
	now := time.UnixMilli(1_700_000_100_000)
	h, err := OpenHeard(t.TempDir(), testutil.Signer(t, 1).Public(), "s1", func() time.Time { return now })
	if err != nil {
		t.Fatal(err)
	}
	bob, eve := testutil.Signer(t, 2).Public().String(), testutil.Signer(t, 3).Public().String()
	sent := func(id string) (string, bool, error) {
		switch id {
		case "to-bob":
			return bob, true, nil
		case "to-eve":
			return eve, true, nil
		}
		return "", false, nil
	}
	drops, err := h.Apply(ctx, bob, "bob", 1000, []Entry{
		{MsgID: "to-bob", Stage: Surfaced, TS: 900},
		{MsgID: "to-eve", Stage: Acknowledged, TS: 900},  // addressed to another key
		{MsgID: "never-sent", Stage: Stored, TS: 900},    // not sent by this session
		{MsgID: "to-bob", Stage: Acknowledged, TS: 1001}, // after the receipt was signed
	}, sent)
	if err != nil {
		t.Fatal(err)
	}
	if drops[ReasonWrongSigner] != 1 || drops[ReasonUnknownMsg] != 1 || drops[ReasonFuture] != 1 {
		t.Errorf("drops = %v", drops)
	}
	st, ok, err := h.Get("to-bob")
	if err != nil || !ok || st.Stage != Surfaced || st.TS != 900 || st.Peer != "bob" || st.Signer != bob {
		t.Errorf("to-bob = %+v, %v, %v", st, ok, err)
	}
	if _, ok, _ := h.Get("to-eve"); ok {
		t.Error("a stage of a message to eve was taken from bob")
	}
	// An earlier stage arriving late does not move it back.
	if _, err := h.Apply(ctx, bob, "bob", 2000, []Entry{{MsgID: "to-bob", Stage: Stored, TS: 800}}, sent); err != nil {
		t.Fatal(err)
	}
	if st, _, _ := h.Get("to-bob"); st.Stage != Surfaced {
		t.Errorf("stage moved back to %v", st.Stage)
	}
	// Once the outbox forgot the message, a later stage from the same key
	// still counts; one from another key does not.
	forgot := func(string) (string, bool, error) { return "", false, nil }
	drops, err = h.Apply(ctx, eve, "eve", 3000, []Entry{{MsgID: "to-bob", Stage: Acknowledged, TS: 2900}}, forgot)
	if err != nil || drops[ReasonWrongSigner] != 1 {
		t.Errorf("eve after the outbox forgot: %v, %v", drops, err)
	}
	if _, err := h.Apply(ctx, bob, "bob", 3000, []Entry{{MsgID: "to-bob", Stage: Acknowledged, TS: 2900}}, forgot); err != nil {
		t.Fatal(err)
	}
	if st, _, _ := h.Get("to-bob"); st.Stage != Acknowledged {
		t.Errorf("bob's later stage after the outbox forgot: %v", st.Stage)
	}
	st, _, _ = h.Get("to-bob")
	st.Heard = identity.Millis(now)
	line := Describe(st, now.Add(90*time.Second))
	for _, want := range []string{"receiver_acknowledged", "signed by bob", "came 1m30s ago"} {
		if !strings.Contains(line, want) {
			t.Errorf("Describe = %q, want %q in it", line, want)
		}
	}
}

func TestCorruptFilesAreErrorsAndKept(t *testing.T) {
	ctx := context.Background()
	o := newOwed(t)
	if err := os.MkdirAll(strings.TrimSuffix(o.Path(), "/s1.json"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(o.Path(), []byte("{junk"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := o.Note(ctx, "k", "m", "k", Stored, true); !errors.Is(err, ErrCorrupt) {
		t.Errorf("note on a corrupt file: %v", err)
	}
	if b, _ := os.ReadFile(o.Path()); string(b) != "{junk" {
		t.Errorf("corrupt file overwritten: %q", b)
	}
}

// An entry whose stages all went is forgotten once its message left the
// mailbox's unread records and goneAfter passed, and kept while either
// does not hold: the file follows the unread messages, not the day's.
func TestOwedForgetsSentEntriesOfMessagesNoLongerUnread(t *testing.T) {
	ctx := context.Background()
	now := time.UnixMilli(1_700_000_000_000)
	o, err := OpenOwed(t.TempDir(), testutil.Signer(t, 1).Public(), "s1", func() time.Time { return now })
	if err != nil {
		t.Fatal(err)
	}
	bob := testutil.Signer(t, 2).Public().String()
	for _, id := range []string{"read", "unread", "unsent"} {
		if _, err := o.Note(ctx, bob, id, bob, Stored, true); err != nil {
			t.Fatal(err)
		}
	}
	send := func(Batch) error { return nil }
	if _, err := o.Flush(ctx, nil, send); err != nil {
		t.Fatal(err)
	}
	if _, err := o.Note(ctx, bob, "unsent", bob, Surfaced, false); err != nil {
		t.Fatal(err)
	}
	live := func(_, id string) bool { return id == "unread" }
	fail := func(Batch) error { return errors.New("outbox down") }
	// Too recent: nothing is forgotten.
	_, _ = o.Flush(ctx, &FlushOptions{Live: live}, fail)
	if _, err := o.Note(ctx, bob, "read", bob, Acknowledged, false); err != nil {
		t.Fatal(err)
	}
	now = now.Add(goneAfter + time.Second)
	_, _ = o.Flush(ctx, &FlushOptions{Live: live}, fail)
	var got []string
	_, _ = o.Flush(ctx, &FlushOptions{Live: live}, func(b Batch) error {
		for _, e := range b.Entries {
			got = append(got, e.MsgID+":"+e.Stage.String())
		}
		return nil
	})
	// "read" was noted acknowledged before it was forgotten, so it still
	// goes; "unsent" keeps its unsent stage.
	want := []string{"read:receiver_acknowledged", "unsent:receiver_surfaced"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("sent %v, want %v", got, want)
	}
	// Now "read" went whole and is not unread: forgotten; "unread" stays.
	now = now.Add(goneAfter + time.Second)
	_, _ = o.Flush(ctx, &FlushOptions{Live: live}, send)
	for _, id := range []string{"read", "unread"} {
		changed, err := o.Note(ctx, bob, id, "", Acknowledged, false)
		if err != nil {
			t.Fatal(err)
		}
		if changed != (id == "unread") {
			t.Errorf("%s still followed: %v", id, changed)
		}
	}
}

// The stored stage comes from the mailbox's unread records (seeds): each
// new one is owed once, a stage noted before its seed takes the seed's
// route, and a stage with no route at all is forgotten.
func TestOwedTakesStoredStagesFromSeedsAndRoutesFromThem(t *testing.T) {
	ctx := context.Background()
	o := newOwed(t)
	bob := testutil.Signer(t, 2).Public().String()
	if _, err := o.Note(ctx, bob, "early", "", Surfaced, true); err != nil {
		t.Fatal(err)
	}
	if _, err := o.Note(ctx, bob, "nowhere", "", Acknowledged, true); err != nil {
		t.Fatal(err)
	}
	seeds := &FlushOptions{Stored: []Seed{{bob, "early", bob + "#b1"}, {bob, "m1", bob + "#b1"}}}
	var got []string
	collect := func(b Batch) error {
		for _, e := range b.Entries {
			got = append(got, b.Route+" "+e.MsgID+":"+e.Stage.String())
		}
		return nil
	}
	if _, err := o.Flush(ctx, seeds, collect); err != nil {
		t.Fatal(err)
	}
	want := bob + "#b1 early:receiver_surfaced " + bob + "#b1 m1:receiver_stored"
	if strings.Join(got, " ") != want {
		t.Errorf("sent %q, want %q", strings.Join(got, " "), want)
	}
	got = nil
	if _, err := o.Flush(ctx, seeds, collect); err != nil || len(got) != 0 {
		t.Errorf("the same seeds again sent %v, %v", got, err)
	}
}
