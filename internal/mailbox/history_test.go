package mailbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/mailbox/history"
	"github.com/interlink-go/interlink/internal/protocol"
)

// histDir returns the history folder of the fixture's mailbox.
func (f *fixture) histDir() string {
	return strings.TrimSuffix(f.mb.Path(), ".json") + ".history"
}

// histFiles returns the names and sizes of the files in the history
// folder.
func (f *fixture) histFiles(tb testing.TB) map[string]int64 {
	tb.Helper()
	ents, err := os.ReadDir(f.histDir())
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		tb.Fatal(err)
	}
	out := make(map[string]int64)
	for _, e := range ents {
		fi, err := e.Info()
		if err != nil {
			tb.Fatal(err)
		}
		out[e.Name()] = fi.Size()
	}
	return out
}

// history returns History(peer, 0, false) of the fixture's mailbox and
// fails the test on an error.
func (f *fixture) history(tb testing.TB, peer string) []Record {
	tb.Helper()
	return historyOf(tb, f.mb, peer)
}

// historyOf returns History(peer, 0, false) of mb and fails the test on an
// error.
func historyOf(tb testing.TB, mb *Mailbox, peer string) []Record {
	tb.Helper()
	recs, err := mb.History(peer, 0, false)
	if err != nil {
		tb.Fatal(err)
	}
	return recs
}

// labels returns, per msg_id, the text and label of recs as the tools
// show them: "superseded by <id>" or the state.
func labels(recs []Record) map[string]string {
	out := make(map[string]string)
	for _, r := range recs {
		label := string(r.State)
		if r.SupersededBy != "" {
			label = "superseded by " + r.SupersededBy
		}
		out[r.Message.MsgID] = r.Message.Text + " | " + label
	}
	return out
}

// The original's case: a peer sends two progress updates and the result
// of one task. The history shows both updates with their text, each
// superseded by the next message, and the result; the replay state is
// what it was without a history (updates superseded by later messages
// leave no tombstone).
func TestTwoUpdatesAndAResultShowSuperseded(t *testing.T) {
	f := newFixture(t)
	f.retain(t, msg{id: "u1", task: "t", status: identity.StatusUpdate})
	f.retain(t, msg{id: "u2", task: "t", status: identity.StatusUpdate, ts: time.Second})
	f.retain(t, msg{id: "r", task: "t", status: identity.StatusResult, ts: 2 * time.Second})

	want := map[string]string{
		"u1": "body of u1 | superseded by u2",
		"u2": "body of u2 | superseded by r",
		"r":  "body of r | receiver_stored",
	}
	if diff := cmp.Diff(want, labels(f.history(t, "alice"))); diff != "" {
		t.Errorf("History (-want +got):\n%s", diff)
	}
	if tombs, err := f.mb.Tombstones(); err != nil || len(tombs) != 0 {
		t.Errorf("tombstones %+v, %v; want none", tombs, err)
	}
	if unread, _ := f.mb.Receive(0); !cmp.Equal(ids(unread), []string{"r"}) {
		t.Errorf("unread %v, want only r", ids(unread))
	}
	found, ok, err := f.mb.Find("u1")
	if err != nil || !ok || !found.Text || found.Record.SupersededBy != "u2" || found.Record.Message.Text != "body of u1" {
		t.Errorf("Find(u1) = %+v, %v, %v", found, ok, err)
	}
}

// An update that arrives already superseded by a later message of its
// task (the result came first) is dropped and leaves no tombstone, as
// before; the history shows it, superseded by the result, as the original
// would have. A copy of it is dropped again and shown once.
func TestUpdateArrivingSupersededIsShownOnce(t *testing.T) {
	f := newFixture(t)
	f.retain(t, msg{id: "r", task: "t", status: identity.StatusResult, ts: 2 * time.Second})
	late := f.message(t, msg{id: "late", task: "t", status: identity.StatusUpdate, ts: time.Second})
	for i := range 2 {
		if added, err := f.mb.Retain(bg, late, "alice"); err != nil || added {
			t.Fatalf("copy %d of the late update = %v, %v; want it dropped", i, added, err)
		}
	}
	want := map[string]string{
		"late": "body of late | superseded by r",
		"r":    "body of r | receiver_stored",
	}
	got := f.history(t, "alice")
	if diff := cmp.Diff(want, labels(got)); diff != "" || len(got) != 2 {
		t.Errorf("History %v (-want +got):\n%s", ids(got), diff)
	}
	if tombs, err := f.mb.Tombstones(); err != nil || len(tombs) != 0 {
		t.Errorf("tombstones %+v, %v; want none", tombs, err)
	}
	lines := 0
	for name := range f.histFiles(t) {
		data, _ := os.ReadFile(filepath.Join(f.histDir(), name))
		lines += strings.Count(string(data), "\n")
	}
	if lines != 1 {
		t.Errorf("%d history lines, want 1", lines)
	}
	// Acknowledging it, as consume does, makes it show acknowledged from
	// then on, and counts it once.
	if n, err := f.mb.Acknowledge([]Receipt{receipt(late), receipt(late)}); err != nil || n != 1 {
		t.Fatalf("Acknowledge = %d, %v; want 1", n, err)
	}
	if n, err := f.mb.Acknowledge([]Receipt{receipt(late)}); err != nil || n != 0 {
		t.Fatalf("Acknowledge again = %d, %v; want 0", n, err)
	}
	found, ok, err := f.open(t).FindReceipt(receipt(late))
	if err != nil || !ok || found.Record.State != StateAcknowledged || found.Record.SupersededBy != "r" {
		t.Errorf("FindReceipt(late) = %+v, %v, %v", found, ok, err)
	}
}

// message_status and read_message find consumed messages with their text
// for the window, also in another process; without the history only the
// tombstone's state and receipt are found.
func TestFindKeepsTheTextOfConsumedMessages(t *testing.T) {
	f := newFixture(t)
	a := f.retain(t, msg{id: "a", text: "the answer is 42"})
	f.retain(t, msg{id: "same-id", from: f.bob, text: "bob's"})
	if _, err := f.mb.Acknowledge([]Receipt{receipt(a)}); err != nil {
		t.Fatal(err)
	}
	other := f.open(t)
	for _, mb := range []*Mailbox{f.mb, other} {
		found, ok, err := mb.FindReceipt(receipt(a))
		if err != nil || !ok || !found.Text || found.Record.Message.Text != "the answer is 42" ||
			found.Record.State != StateAcknowledged || found.Record.Peer != "alice" {
			t.Errorf("FindReceipt(a) = %+v, %v, %v", found, ok, err)
		}
		if found, ok, _ := mb.Find("a"); !ok || found.Record.Message.Text != "the answer is 42" {
			t.Errorf("Find(a) = %+v, %v", found, ok)
		}
	}
	if _, ok, _ := f.mb.FindReceipt(Receipt{Sender: f.bob.Public().String(), MsgID: "a"}); ok {
		t.Error("FindReceipt found a's msg_id under another sender")
	}
	if found, ok, _ := f.mb.Find("same-id"); !ok || found.Record.State != StateStored {
		t.Errorf("Find(same-id) = %+v, %v", found, ok)
	}

	// Without the history the tombstone still answers, without text.
	if err := os.RemoveAll(f.histDir()); err != nil {
		t.Fatal(err)
	}
	found, ok, err := f.mb.Find("a")
	if err != nil || !ok || found.Text || found.NotKept || found.Record.State != StateAcknowledged || found.Record.Message.Text != "" {
		t.Errorf("Find(a) without history = %+v, %v, %v", found, ok, err)
	}
	if got := f.history(t, "alice"); len(got) != 0 {
		t.Errorf("History without history files = %v", ids(got))
	}

	// Once the message has left the window nothing is found.
	f.clock.Add(protocol.MaxPast + time.Second)
	if _, ok, err := f.mb.Find("a"); err != nil || ok {
		t.Errorf("Find(a) after the window = %v, %v", ok, err)
	}
}

// The history is no replay state: without it, or with a history that
// cannot be written, which messages are new is decided as before, and
// intake and acknowledging go on. A history line for a message the
// records and tombstones do not know does not keep the message out.
func TestHistoryIsNotReplayState(t *testing.T) {
	t.Run("removed", func(t *testing.T) {
		f := newFixture(t)
		a := f.retain(t, msg{id: "a"})
		f.mb.Acknowledge([]Receipt{receipt(a)})
		f.retain(t, msg{id: "u1", task: "t", status: identity.StatusUpdate})
		u2 := f.retain(t, msg{id: "u2", task: "t", status: identity.StatusUpdate, ts: time.Second})
		u1 := f.message(t, msg{id: "u1", task: "t", status: identity.StatusUpdate})
		if err := os.RemoveAll(f.histDir()); err != nil {
			t.Fatal(err)
		}
		for _, m := range []identity.Message{a, u1, u2} {
			if added, err := f.open(t).Retain(bg, m, "alice"); err != nil || added {
				t.Errorf("copy of %s without history = %v, %v; want it dropped", m.MsgID, added, err)
			}
		}
	})
	t.Run("unwritable", func(t *testing.T) {
		f := newFixture(t)
		if err := os.MkdirAll(filepath.Dir(f.histDir()), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f.histDir(), []byte("not a folder"), 0o600); err != nil {
			t.Fatal(err)
		}
		a := f.retain(t, msg{id: "a"})
		// An unknown receipt makes Acknowledge look in the history too.
		if n, err := f.mb.Acknowledge([]Receipt{receipt(a), {Sender: "x", MsgID: "gone"}}); err != nil || n != 1 {
			t.Fatalf("Acknowledge with an unwritable history = %d, %v", n, err)
		}
		f.retain(t, msg{id: "u1", task: "t", status: identity.StatusUpdate})
		f.retain(t, msg{id: "u2", task: "t", status: identity.StatusUpdate, ts: time.Second})
		if added, err := f.mb.Retain(bg, a, "alice"); err != nil || added {
			t.Errorf("copy of a = %v, %v; want it dropped", added, err)
		}
		if _, err := f.mb.History("alice", 0, false); err == nil {
			t.Error("History with an unreadable history folder gave no error")
		}
		if found, ok, err := f.mb.Find("u2"); err != nil || !ok || !found.Text {
			t.Errorf("Find(u2), unread, = %+v, %v, %v", found, ok, err)
		}
	})
	t.Run("line without record", func(t *testing.T) {
		f := newFixture(t)
		m := f.message(t, msg{id: "m", text: "the real one"})
		forged := Record{Message: m, Peer: "mallory", State: StateAcknowledged}
		if err := f.mb.hist.Add(historyLines([]Record{forged}), identity.Millis(f.mb.now())); err != nil {
			t.Fatal(err)
		}
		if added, err := f.mb.Retain(bg, m, "alice"); err != nil || !added {
			t.Fatalf("Retain of a message only the history names = %v, %v; want it stored", added, err)
		}
		if unread, _ := f.mb.Receive(0); !cmp.Equal(ids(unread), []string{"m"}) {
			t.Errorf("unread %v", ids(unread))
		}
		// The unread record wins over the line; acknowledging it writes
		// no second line.
		if found, _, _ := f.mb.Find("m"); found.Record.State != StateStored || found.Record.Peer != "alice" {
			t.Errorf("Find(m) = %+v, want the unread record", found)
		}
		f.mb.Acknowledge([]Receipt{receipt(m)})
		if found, _, _ := f.open(t).Find("m"); found.Record.State != StateAcknowledged {
			t.Errorf("Find(m) after acknowledging = %+v", found)
		}
	})
}

// floodShape sends one sender's messages into the mailbox of f the way a
// peer that floods would: it returns the msg_id of message i after
// making it stop being unread.
type floodShape struct {
	name       string
	count      int
	send       func(t *testing.T, f *fixture, i int) string
	tombstoned bool // the messages leave tombstones
}

var floodShapes = []floodShape{
	{"distinct messages, read at once", MaxHistoryLines + 20, func(t *testing.T, f *fixture, i int) string {
		m := f.message(t, msg{id: fmt.Sprintf("m-%06d", i), ts: time.Duration(i) * time.Millisecond})
		if added, err := f.mb.Retain(bg, m, "alice"); err != nil || !added {
			t.Fatalf("message %d = %v, %v", i, added, err)
		}
		if n, err := f.mb.Acknowledge([]Receipt{receipt(m)}); err != nil || n != 1 {
			t.Fatalf("Acknowledge %d = %d, %v", i, n, err)
		}
		return m.MsgID
	}, true},
	{"updates superseded at once", MaxHistoryLines + 20, func(t *testing.T, f *fixture, i int) string {
		// Update i supersedes update i-1; the last one is superseded by
		// the next test message.
		m := f.message(t, msg{id: fmt.Sprintf("u-%06d", i), task: "t", status: identity.StatusUpdate, ts: time.Duration(i) * time.Millisecond})
		if added, err := f.mb.Retain(bg, m, "alice"); err != nil || !added {
			t.Fatalf("update %d = %v, %v", i, added, err)
		}
		return fmt.Sprintf("u-%06d", i-1)
	}, false},
	{"updates arriving superseded", MaxHistoryLines + 20, func(t *testing.T, f *fixture, i int) string {
		if i == 0 {
			f.retain(t, msg{id: "result", task: "late", status: identity.StatusResult, ts: time.Hour})
		}
		m := f.message(t, msg{id: fmt.Sprintf("l-%06d", i), task: "late", status: identity.StatusUpdate, ts: time.Duration(i) * time.Millisecond})
		if added, err := f.mb.Retain(bg, m, "alice"); err != nil || added {
			t.Fatalf("late update %d = %v, %v", i, added, err)
		}
		return m.MsgID
	}, false},
	{"large messages, read at once", MaxHistoryBytes>>20 + 2, func(t *testing.T, f *fixture, i int) string {
		m := f.message(t, msg{id: fmt.Sprintf("big-%06d", i), ts: time.Duration(i) * time.Millisecond})
		m.Text = strings.Repeat("x", 1<<20) // Retain checks no signature
		if added, err := f.mb.Retain(bg, m, "alice"); err != nil || !added {
			t.Fatalf("message %d = %v, %v", i, added, err)
		}
		if n, err := f.mb.Acknowledge([]Receipt{receipt(m)}); err != nil || n != 1 {
			t.Fatalf("Acknowledge %d = %d, %v", i, n, err)
		}
		return m.MsgID
	}, true},
}

// A peer that floods fills only its own share of the history for the
// day: at most MaxHistoryLines messages and MaxHistoryBytes bytes, then
// one line saying the rest is not kept. The folder stays within that
// bound, the day is named by NotKept, a message beyond the share is found
// by its tombstone (where it has one) without text, and another peer's
// messages of the same day are still kept.
func TestHistoryFloodStaysWithinTheSendersShare(t *testing.T) {
	if testing.Short() {
		t.Skip("fills a sender's share of the history")
	}
	for _, shape := range floodShapes {
		t.Run(shape.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			f.root = memoryDir(t)
			f.mb = f.open(t)
			var last string
			for i := range shape.count {
				last = shape.send(t, f, i)
			}
			bob := consumed(t, f, msg{id: "bob-after", text: "still kept"})

			files := f.histFiles(t)
			if len(files) != 1 {
				t.Fatalf("history files %v, want one day", files)
			}
			var size int64
			for _, n := range files {
				size += n
			}
			// One line for bob's message and one marker of a few hundred
			// bytes are allowed beyond alice's share.
			if limit := int64(MaxHistoryBytes + 2<<10); size > limit {
				t.Errorf("history holds %d bytes, more than alice's share and bob's line (%d)", size, limit)
			}
			kept := f.history(t, "alice")
			if len(kept) > MaxHistoryLines+1 { // plus the one still unread
				t.Errorf("history shows %d of alice's messages, more than %d", len(kept), MaxHistoryLines)
			}
			if days, err := f.mb.NotKept("alice"); err != nil || !cmp.Equal(days, []string{history.Day(identity.Millis(baseTime))}) {
				t.Errorf("NotKept(alice) = %v, %v", days, err)
			}
			if days, _ := f.mb.NotKept("bob"); len(days) != 0 {
				t.Errorf("NotKept(bob) = %v, want none", days)
			}
			got := f.history(t, "bob")
			if len(got) != 1 || got[0].Message.MsgID != bob.MsgID || got[0].Message.Text != "still kept" {
				t.Errorf("History(bob) = %v", labels(got))
			}
			for _, r := range kept {
				if r.Message.MsgID == last {
					t.Errorf("the last message of the flood, %s, is kept", last)
				}
			}
			// Beyond the share a message is known by its tombstone only,
			// or, when it left none, not at all.
			found, ok, err := f.mb.Find(last)
			switch {
			case err != nil:
				t.Fatal(err)
			case ok != shape.tombstoned:
				t.Errorf("Find(%s) found %v, want %v", last, ok, shape.tombstoned)
			case ok && (found.Text || !found.NotKept):
				t.Errorf("Find(%s) = text %v, not kept %v; want no text and marked as beyond the share", last, found.Text, found.NotKept)
			}
		})
	}
}

// History files leave with the window: a day's file is removed, by the
// first change or read of the history under the lock, once every message
// it can hold was signed more than 24 hours before; messages that left the
// window are no longer shown even while their day's file stays.
func TestHistoryFilesLeaveWithTheWindow(t *testing.T) {
	f := newFixture(t)
	a := f.retain(t, msg{id: "a"})
	f.mb.Acknowledge([]Receipt{receipt(a)})
	day := history.Day(a.TS)
	end, _ := history.DayEnd(day)
	if _, ok := f.histFiles(t)[day+".jsonl"]; !ok {
		t.Fatalf("history files %v, want %s.jsonl", f.histFiles(t), day)
	}

	f.clock.Set(time.UnixMilli(int64(a.TS)).Add(protocol.MaxPast - time.Second))
	if got := ids(f.history(t, "alice")); !cmp.Equal(got, []string{"a"}) {
		t.Errorf("History a second before a leaves the window = %v", got)
	}
	f.clock.Set(time.UnixMilli(int64(a.TS)).Add(protocol.MaxPast + time.Second))
	if got := f.history(t, "alice"); len(got) != 0 {
		t.Errorf("History after a left the window = %v", ids(got))
	}
	// The day is not over for the window yet: its file stays.
	f.clock.Set(time.UnixMilli(int64(end)).Add(protocol.MaxPast - time.Millisecond))
	f.history(t, "alice")
	if _, ok := f.histFiles(t)[day+".jsonl"]; !ok {
		t.Errorf("the file of %s left before its last moment left the window", day)
	}
	// A read removes it once the window has passed the whole day.
	f.clock.Add(time.Millisecond)
	f.history(t, "alice")
	if files := f.histFiles(t); len(files) != 0 {
		t.Errorf("history files %v after the window passed their day", files)
	}
	// So does a change that writes the history, in another process.
	b := f.retain(t, msg{id: "b", ts: f.clock.Now().Sub(baseTime) - time.Hour})
	f.open(t).Acknowledge([]Receipt{receipt(b)})
	bDay := history.Day(b.TS)
	if _, ok := f.histFiles(t)[bDay+".jsonl"]; !ok {
		t.Fatalf("history files %v, want %s.jsonl", f.histFiles(t), bDay)
	}
	bEnd, _ := history.DayEnd(bDay)
	f.clock.Set(time.UnixMilli(int64(bEnd)).Add(protocol.MaxPast + time.Millisecond))
	c := f.retain(t, msg{id: "c", ts: f.clock.Now().Sub(baseTime) - time.Hour})
	f.mb.Acknowledge([]Receipt{receipt(c)})
	files := f.histFiles(t)
	if _, ok := files[bDay+".jsonl"]; ok || len(files) != 1 {
		t.Errorf("history files %v, want only the day of c", files)
	}
}

// A message both in the history and still unread (a crash between the
// history line and the tombstone) is shown once, as the unread record;
// acknowledging it writes no second line. A line left unfinished by a
// crashed writer is not read and is cut off by the next writer; a line
// that is not a history line is skipped, and the rest is still shown.
func TestHistoryAfterACrash(t *testing.T) {
	f := newFixture(t)
	m := f.retain(t, msg{id: "m"})
	recs := f.records(t)
	if err := f.mb.hist.Add(historyLines(recs), identity.Millis(f.mb.now())); err != nil {
		t.Fatal(err)
	}
	if got := labels(f.history(t, "alice")); !cmp.Equal(got, map[string]string{"m": "body of m | receiver_stored"}) {
		t.Errorf("History = %v", got)
	}
	path := filepath.Join(f.histDir(), history.Day(m.TS)+".jsonl")
	before, _ := os.ReadFile(path)
	f.mb.Acknowledge([]Receipt{receipt(m)})
	if after, _ := os.ReadFile(path); string(after) != string(before) {
		t.Errorf("acknowledging wrote a second line:\n%s", after)
	}
	if got := labels(historyOf(t, f.open(t), "alice")); !cmp.Equal(got, map[string]string{"m": "body of m | receiver_acknowledged"}) {
		t.Errorf("History after acknowledging = %v", got)
	}

	fh, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fh.WriteString("{\"sender\":\"x\"}\n{\"sender\":\"unfinished")
	fh.Close()
	g := f.retain(t, msg{id: "g"})
	f.mb.Acknowledge([]Receipt{receipt(g)})
	data, _ := os.ReadFile(path)
	if strings.Contains(string(data), "unfinished") {
		t.Errorf("the unfinished line was not cut off:\n%s", data)
	}
	want := map[string]string{"m": "body of m | receiver_acknowledged", "g": "body of g | receiver_acknowledged"}
	if got := labels(historyOf(t, f.open(t), "alice")); !cmp.Equal(got, want) {
		t.Errorf("History after a bad line = %v", got)
	}
}

// A mailbox file of the earlier shape keeps consumed records whole; the
// history shows their text before the first change moves them out of the
// file, and after.
func TestEarlierShapeKeepsItsTextInTheHistory(t *testing.T) {
	f := newFixture(t)
	read := f.message(t, msg{id: "read", text: "consumed long ago"})
	data, _, err := encodeRecords([]Record{{Message: read, Peer: "alice", State: StateAcknowledged}})
	if err != nil {
		t.Fatal(err)
	}
	file, _ := encode(data, nil)
	if err := os.MkdirAll(filepath.Dir(f.mb.Path()), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f.mb.Path(), file, 0o600); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"read": "consumed long ago | receiver_acknowledged"}
	if got := labels(f.history(t, "alice")); !cmp.Equal(got, want) {
		t.Errorf("History before the first change = %v", got)
	}
	f.retain(t, msg{id: "new"})
	want["new"] = "body of new | receiver_stored"
	if got := labels(historyOf(t, f.open(t), "alice")); !cmp.Equal(got, want) {
		t.Errorf("History after the first change = %v", got)
	}
}

// An unread message is found as Receive finds it, without the lock, so a
// damaged tombstone log does not hide it; what only the log and the
// history know then comes with the error.
func TestFindUnreadBesideADamagedLog(t *testing.T) {
	f := newFixture(t)
	f.retain(t, msg{id: "unread"})
	if err := os.WriteFile(f.logPath(), []byte("{\"sender\":\"x\"}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if found, ok, err := f.mb.Find("unread"); err != nil || !ok || found.Record.Message.Text != "body of unread" {
		t.Errorf("Find(unread) = %+v, %v, %v", found, ok, err)
	}
	if _, _, err := f.mb.Find("other"); !errors.Is(err, ErrCorrupt) {
		t.Errorf("Find(other) = %v, want ErrCorrupt", err)
	}
}
