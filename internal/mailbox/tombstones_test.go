package mailbox

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/interlink-go/interlink/internal/statefile"
)

// logPath returns the tombstone log of the fixture's mailbox.
func (f *fixture) logPath() string {
	return strings.TrimSuffix(f.mb.Path(), ".json") + ".tombstones.jsonl"
}

// A tombstone written by one process is seen by another, which reads only
// what was appended, and a copy of the message is dropped there.
func TestTombstonesSharedBetweenProcesses(t *testing.T) {
	f := newFixture(t)
	other := f.open(t)
	a := f.retain(t, msg{id: "a"})
	b := f.retain(t, msg{id: "b"})
	if _, err := other.Tombstones(); err != nil { // the other reads the empty log
		t.Fatal(err)
	}
	if n, err := f.mb.Acknowledge([]Receipt{receipt(a)}); err != nil || n != 1 {
		t.Fatalf("Acknowledge = %d, %v", n, err)
	}
	tombs, err := other.Tombstones()
	if err != nil || len(tombs) != 1 || tombs[0].MsgID != "a" || !tombs[0].Acknowledged {
		t.Fatalf("the other process sees %+v, %v", tombs, err)
	}
	if added, err := other.Retain(bg, a, "alice"); err != nil || added {
		t.Errorf("the other process stored a copy of a consumed message: %v, %v", added, err)
	}
	if n, err := other.Acknowledge([]Receipt{receipt(b)}); err != nil || n != 1 {
		t.Fatalf("Acknowledge in the other process = %d, %v", n, err)
	}
	if added, err := f.mb.Retain(bg, b, "alice"); err != nil || added {
		t.Errorf("a copy of a message the other process consumed was stored: %v, %v", added, err)
	}
}

// A line left unfinished by a writer that crashed is not read, and the next
// writer cuts it off before appending.
func TestTombstoneLogUnfinishedLine(t *testing.T) {
	f := newFixture(t)
	a := f.retain(t, msg{id: "a"})
	f.mb.Acknowledge([]Receipt{receipt(a)})
	fh, err := os.OpenFile(f.logPath(), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fh.WriteString(`{"sender":"x","msg_id":"half`); err != nil {
		t.Fatal(err)
	}
	fh.Close()

	again := f.open(t)
	tombs, err := again.Tombstones()
	if err != nil || len(tombs) != 1 {
		t.Fatalf("tombstones with an unfinished line: %+v, %v", tombs, err)
	}
	b := f.retain(t, msg{id: "b"})
	if _, err := again.Acknowledge([]Receipt{receipt(b)}); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(f.logPath())
	if strings.Contains(string(data), "half") || strings.Count(string(data), "\n") != 2 {
		t.Errorf("log after the next append:\n%s", data)
	}
	tombs, err = f.open(t).Tombstones()
	if err != nil || len(tombs) != 2 {
		t.Errorf("a fresh reader sees %d tombstones, %v", len(tombs), err)
	}
}

// Once enough tombstones are older than the replay window, the log is
// rewritten without them; every process reads the new file in full.
func TestTombstoneLogCompaction(t *testing.T) {
	f := newFixture(t)
	other := f.open(t)
	var receipts []Receipt
	for i := range 20 {
		m := f.retain(t, msg{id: "old" + string(rune('a'+i))})
		receipts = append(receipts, receipt(m))
	}
	f.mb.Acknowledge(receipts)
	if tombs, _ := other.Tombstones(); len(tombs) != 20 {
		t.Fatalf("%d tombstones before the window passed", len(tombs))
	}
	before, _ := os.Stat(f.logPath())

	f.clock.Add(25 * time.Hour)
	fresh := f.retain(t, msg{id: "fresh", ts: 25 * time.Hour})
	f.mb.Acknowledge([]Receipt{receipt(fresh)})
	after, err := os.Stat(f.logPath())
	if err != nil {
		t.Fatal(err)
	}
	if os.SameFile(before, after) {
		t.Fatal("the log was not rewritten")
	}
	tombs, err := other.Tombstones()
	if err != nil || len(tombs) != 1 || tombs[0].MsgID != "fresh" {
		t.Errorf("after compaction the other process sees %+v, %v", tombs, err)
	}
}

// A mailbox file of the earlier shape, which kept consumed and superseded
// records whole, is moved to the tombstone log by the first change, and
// its consumed messages are still recognised.
func TestEarlierShapeMigrates(t *testing.T) {
	f := newFixture(t)
	read := f.message(t, msg{id: "read"})
	unread := f.message(t, msg{id: "unread"})
	recs := []Record{
		{Message: read, Peer: "alice", State: StateAcknowledged},
		{Message: unread, Peer: "alice", State: StateStored},
	}
	data, err := encodeRecords(recs)
	if err != nil {
		t.Fatal(err)
	}
	file, _ := encode(data, nil)
	if err := os.MkdirAll(strings.TrimSuffix(f.mb.Path(), "/s1.json"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f.mb.Path(), file, 0o600); err != nil {
		t.Fatal(err)
	}
	if got := ids(f.records(t)); !cmp.Equal(got, []string{"unread"}) {
		t.Errorf("unread records %v", got)
	}
	if added, err := f.mb.Retain(bg, read, "alice"); err != nil || added {
		t.Fatalf("a copy of a message consumed before the change: %v, %v", added, err)
	}
	tombs, err := f.mb.Tombstones()
	if err != nil || len(tombs) != 1 || tombs[0].MsgID != "read" {
		t.Fatalf("tombstones %+v, %v", tombs, err)
	}
	f.retain(t, msg{id: "new"})
	if data, _ := os.ReadFile(f.mb.Path()); strings.Contains(string(data), `"msg_id":"read"`) {
		t.Errorf("the consumed record is still in the file:\n%s", data)
	}
}

// A message both unread and tombstoned (a crash between the two writes of
// an acknowledgement) counts as consumed at the next change.
func TestTombstoneWinsOverARecord(t *testing.T) {
	f := newFixture(t)
	a := f.retain(t, msg{id: "a"})
	tb := Tombstone{Sender: a.From, MsgID: a.MsgID, TS: a.TS, Acknowledged: true}
	if err := os.WriteFile(f.logPath(), appendTombstone(nil, &tb), 0o600); err != nil {
		t.Fatal(err)
	}
	f.retain(t, msg{id: "b"})
	if got := ids(f.records(t)); !cmp.Equal(got, []string{"b"}) {
		t.Errorf("unread records %v, want only b", got)
	}
}

// A line that is not a tombstone makes the mailbox refuse changes, and
// nothing is overwritten.
func TestCorruptTombstoneLog(t *testing.T) {
	f := newFixture(t)
	f.retain(t, msg{id: "a"})
	bad := []byte("{\"sender\":\"x\"}\n")
	if err := os.WriteFile(f.logPath(), bad, 0o600); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(f.mb.Path())
	if _, err := f.mb.Retain(bg, f.message(t, msg{id: "b"}), "alice"); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Retain with a corrupt log = %v, want ErrCorrupt", err)
	}
	after, _ := os.ReadFile(f.mb.Path())
	logAfter, _ := os.ReadFile(f.logPath())
	if string(before) != string(after) || string(logAfter) != string(bad) {
		t.Error("a file changed")
	}
}

// The writers the background loops use stop waiting for the file lock
// when their context ends, so a lock held elsewhere cannot hold up a
// shutdown.
func TestWritersGiveUpOnTheLockWithTheirContext(t *testing.T) {
	f := newFixture(t)
	f.retain(t, msg{id: "a"})
	unlock, err := statefile.Lock(statefile.LockPath(f.mb.Path(), "lock"))
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	ctx, cancel := context.WithCancel(bg)
	cancel()
	if _, err := f.mb.Retain(ctx, f.message(t, msg{id: "b"}), "alice"); !errors.Is(err, context.Canceled) {
		t.Errorf("Retain = %v, want context.Canceled", err)
	}
	if _, err := f.mb.Reserve(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Reserve = %v, want context.Canceled", err)
	}
	if err := f.mb.Finish(ctx, "id", StateInboxQueued); !errors.Is(err, context.Canceled) {
		t.Errorf("Finish = %v, want context.Canceled", err)
	}
}
