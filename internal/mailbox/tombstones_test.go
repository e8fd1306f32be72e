package mailbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/interlink-go/interlink/internal/identity"
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

// writeLog replaces the tombstone log with n acknowledged tombstones from
// the signer from, signed at ts, with msg_ids prefix-000000 on.
func writeLog(tb testing.TB, f *fixture, from *identity.Signer, prefix string, n int, ts time.Time) {
	tb.Helper()
	var buf []byte
	for i := range n {
		tomb := Tombstone{Sender: from.Public().String(), MsgID: fmt.Sprintf("%s-%06d", prefix, i),
			TS: identity.Millis(ts), Acknowledged: true}
		buf = appendTombstone(buf, &tomb)
	}
	// Written and synced as the mailbox writes a compacted log.
	if err := statefile.WriteAtomic(f.logPath(), buf); err != nil {
		tb.Fatal(err)
	}
}

// Once the tombstones older than the replay window are at least as many
// as the live ones (and enough to be worth a rewrite), the log is
// rewritten without them; every process reads the new file in full.
func TestTombstoneLogCompaction(t *testing.T) {
	f := newFixture(t)
	other := f.open(t)
	writeLog(t, f, f.alice, "old", compactFloor, baseTime)
	if tombs, _ := other.Tombstones(); len(tombs) != compactFloor {
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
	if data, _ := os.ReadFile(f.logPath()); strings.Count(string(data), "\n") != 1 {
		t.Errorf("the compacted log holds:\n%s", data)
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
	data, _, err := encodeRecords(recs)
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
	if _, err := f.mb.Finish(ctx, "id", StateInboxQueued); !errors.Is(err, context.Canceled) {
		t.Errorf("Finish = %v, want context.Canceled", err)
	}
}

// countRewrites reports how often the log file was replaced (compacted)
// while step ran n times.
func countRewrites(tb testing.TB, f *fixture, n int, step func(i int)) (rewrites int) {
	tb.Helper()
	last, err := os.Stat(f.logPath())
	if err != nil {
		tb.Fatal(err)
	}
	for i := range n {
		step(i)
		fi, err := os.Stat(f.logPath())
		if err != nil {
			tb.Fatal(err)
		}
		if !os.SameFile(last, fi) {
			rewrites++
		}
		last = fi
	}
	return rewrites
}

// A mailbox whose log holds a whole share of one sender's tombstones
// appends the next consumed message as one line; the log is not rewritten.
func TestAppendAtAFullShareDoesNotRewriteTheLog(t *testing.T) {
	f := newFixture(t)
	writeLog(t, f, f.alice, "flood", MaxTombstones, baseTime)
	before, err := os.Stat(f.logPath())
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		consumed(t, f, msg{id: fmt.Sprintf("bob-%d", i)})
	}
	after, err := os.Stat(f.logPath())
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(before, after) {
		t.Fatal("the log was rewritten")
	}
	tomb := Tombstone{Sender: f.bob.Public().String(), MsgID: "bob-0", TS: identity.Millis(baseTime), Acknowledged: true}
	if grew, line := after.Size()-before.Size(), int64(len(appendTombstone(nil, &tomb))); grew != 3*line {
		t.Errorf("the log grew by %d bytes for three tombstones of %d", grew, line)
	}
}

// While messages leave the replay window as fast as new ones are
// consumed, the log is rewritten once per live log's worth of deaths, not
// more often: each rewrite costs no more lines than died since the last.
func TestCompactionCostIsAmortised(t *testing.T) {
	const live, steps = 2 * compactFloor, 4 * compactFloor
	f := newFixture(t)
	f.root = memoryDir(t)
	f.mb = f.open(t)
	// live tombstones signed a second apart; from the end of the window
	// on, one leaves it for each message consumed.
	var buf []byte
	for i := range live {
		tomb := Tombstone{Sender: f.alice.Public().String(), MsgID: fmt.Sprintf("old-%06d", i),
			TS: identity.Millis(baseTime.Add(time.Duration(i) * time.Second)), Acknowledged: true}
		buf = appendTombstone(buf, &tomb)
	}
	if err := os.MkdirAll(filepath.Dir(f.logPath()), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f.logPath(), buf, 0o600); err != nil {
		t.Fatal(err)
	}
	f.clock.Set(baseTime.Add(24 * time.Hour))
	tmpl := f.message(t, msg{from: f.bob, id: "tmpl"})
	rewrites := countRewrites(t, f, steps, func(i int) {
		f.clock.Add(time.Second)
		m := tmpl
		m.MsgID = fmt.Sprintf("new-%06d", i)
		m.TS = identity.Millis(f.clock.Now())
		if _, err := f.mb.Retain(bg, m, "bob"); err != nil {
			t.Fatal(err)
		}
		if _, err := f.mb.Acknowledge([]Receipt{receipt(m)}); err != nil {
			t.Fatal(err)
		}
	})
	if limit := steps / live; rewrites > limit {
		t.Errorf("%d rewrites in %d steps with %d live tombstones; want at most %d", rewrites, steps, live, limit)
	}
	if rewrites == 0 {
		t.Error("the log was never compacted")
	}
	if tombs, err := f.mb.Tombstones(); err != nil || len(tombs) != steps {
		t.Errorf("%d tombstones, %v; want the %d new ones", len(tombs), err, steps)
	}
}
