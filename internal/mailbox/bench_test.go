package mailbox

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/mailbox/history"

	"github.com/interlink-go/interlink/internal/statefile"
)

// The mailbox at its record bound: what one fetch, one acknowledgement and
// one new message cost when the file holds 4096 unread records (about 2 MB
// of JSON). Each operation reads the whole file; the writing ones also
// write it atomically with fsync. A Mailbox that last read or wrote the
// file itself skips decoding it again; the Cold fetch opens a new Mailbox
// each time, as another process would. The Floor benchmarks are what no
// implementation of this file can avoid: reading its bytes, and replacing
// it atomically with fsync.

func BenchmarkFloorRead4096(b *testing.B) {
	f := newFixture(b)
	writeRecords(b, f, MaxRecords)
	for b.Loop() {
		if _, _, err := statefile.Read(f.mb.Path()); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkFloorWriteAtomic4096(b *testing.B) {
	f := newFixture(b)
	writeRecords(b, f, MaxRecords)
	data, _, err := statefile.Read(f.mb.Path())
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if err := statefile.WriteAtomic(f.mb.Path(), data); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkReceive4096Cold(b *testing.B) {
	f := newFixture(b)
	writeRecords(b, f, MaxRecords)
	b.ReportAllocs()
	for b.Loop() {
		recs, err := f.open(b).Receive(20)
		if err != nil || len(recs) != 20 {
			b.Fatalf("Receive = %d records, %v", len(recs), err)
		}
	}
}

func BenchmarkReceive4096(b *testing.B) {
	f := newFixture(b)
	writeRecords(b, f, MaxRecords)
	b.ReportAllocs()
	for b.Loop() {
		recs, err := f.mb.Receive(20)
		if err != nil || len(recs) != 20 {
			b.Fatalf("Receive = %d records, %v", len(recs), err)
		}
	}
}

func BenchmarkAcknowledge4096(b *testing.B) {
	f := newFixture(b)
	writeRecords(b, f, MaxRecords)
	from := f.message(b, msg{id: "x"}).From
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if i == MaxRecords {
			b.StopTimer()
			writeRecords(b, f, MaxRecords)
			i = 0
			b.StartTimer()
		}
		n, err := f.mb.Acknowledge([]Receipt{{Sender: from, MsgID: fmt.Sprintf("fill-%06d", i)}})
		if err != nil || n != 1 {
			b.Fatalf("Acknowledge = %d, %v", n, err)
		}
		i++
	}
}

// BenchmarkRetain4000 retains a message from alice in a mailbox holding
// 4,000 unread records of other senders (one sender may not hold so many:
// see [Mailbox.share]). Alice may hold half of what they leave free, so
// the mailbox is written again once she has.
func BenchmarkRetain4000(b *testing.B) {
	f := newFixture(b)
	const base = 4000
	fill := func() {
		writeRecords(b, f, 0)
		addRecords(b, f, f.bob, "fill-bob", base/2, "")
		addRecords(b, f, f.me, "fill-me", base/2, "")
	}
	fill()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if i == (MaxRecords-base)/2 {
			b.StopTimer()
			fill()
			i = 0
			b.StartTimer()
		}
		m := f.message(b, msg{id: fmt.Sprintf("new-%06d", i)})
		if added, err := f.mb.Retain(bg, m, "alice"); err != nil || !added {
			b.Fatalf("Retain = %v, %v", added, err)
		}
		i++
	}
}

// BenchmarkReserveQuiet4096 is the notification loop's tick on a full
// mailbox whose unread messages were already announced: nothing is due.
func BenchmarkReserveQuiet4096(b *testing.B) {
	f := newFixture(b)
	writeRecords(b, f, MaxRecords)
	n, err := f.mb.Reserve(bg)
	if err != nil || n == nil {
		b.Fatalf("first Reserve = %v, %v; want a notice", n, err)
	}
	if _, err := f.mb.Finish(bg, n.ID, StateInboxQueued); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if n, err := f.mb.Reserve(bg); err != nil || n != nil {
			b.Fatalf("Reserve = %v, %v; want nothing due", n, err)
		}
	}
}

// BenchmarkIntake is what one message costs a session that reads what it
// receives: Retain, then Acknowledge, each a locked change of the file
// with fsync, and the tombstone appended. It compares two mailboxes in one
// run, one operation on each in turn so that a change of the machine's
// load falls on both: "empty" starts with nothing; "share-full" starts
// with a log that holds a whole share of tombstones ([MaxTombstones]) of
// another sender, as a flood leaves it, and a history that holds that
// sender's whole share of the day ([MaxHistoryLines] messages). It reports
// the messages per second
// of each and full/empty, their ratio. The files live in memory-backed
// storage where the system has it, so that what the mailbox does, not the
// disk's fsync, is measured.
func BenchmarkIntake(b *testing.B) {
	type side struct {
		f    *fixture
		tmpl identity.Message
		took time.Duration
	}
	sides := make([]*side, 2)
	for i := range sides {
		f := newFixture(b)
		f.root = memoryDir(b)
		f.mb = f.open(b)
		if i == 1 {
			writeLog(b, f, f.alice, "flood", MaxTombstones, baseTime)
			writeHistory(b, f, f.alice, "flood", MaxHistoryLines)
		}
		if _, err := f.mb.Tombstones(); err != nil { // the log read once, as by a running server
			b.Fatal(err)
		}
		if _, err := f.mb.History("alice", 1, false); err != nil { // and the history
			b.Fatal(err)
		}
		sides[i] = &side{f: f, tmpl: f.message(b, msg{from: f.bob, id: "tmpl"})}
	}
	n := 0
	for b.Loop() {
		for _, s := range sides {
			m := s.tmpl
			m.MsgID = fmt.Sprintf("m-%08d", n)
			start := time.Now()
			if added, err := s.f.mb.Retain(bg, m, "bob"); err != nil || !added {
				b.Fatalf("Retain = %v, %v", added, err)
			}
			if c, err := s.f.mb.Acknowledge([]Receipt{{Sender: m.From, MsgID: m.MsgID}}); err != nil || c != 1 {
				b.Fatalf("Acknowledge = %d, %v", c, err)
			}
			s.took += time.Since(start)
		}
		n++
	}
	empty := float64(n) / sides[0].took.Seconds()
	full := float64(n) / sides[1].took.Seconds()
	b.ReportMetric(empty, "empty-msgs/s")
	b.ReportMetric(full, "full-msgs/s")
	b.ReportMetric(full/empty, "full/empty")
}

// writeHistory writes n history lines of acknowledged messages from the
// signer from, with msg_ids prefix-000000 on, into the history file of
// the day of baseTime, as the mailbox would have appended them.
func writeHistory(tb testing.TB, f *fixture, from *identity.Signer, prefix string, n int) {
	tb.Helper()
	m := f.message(tb, msg{from: from, id: "x", text: "a message of about one line of prose, like most are"})
	var buf []byte
	for i := range n {
		r := history.Line{Message: m, Peer: f.peerOf(m), State: string(StateAcknowledged)}
		r.Message.MsgID = fmt.Sprintf("%s-%06d", prefix, i)
		var err error
		if buf, err = history.AppendLine(buf, &r); err != nil {
			tb.Fatal(err)
		}
	}
	if err := statefile.WriteAtomic(filepath.Join(f.histDir(), history.Day(m.TS)+".jsonl"), buf); err != nil {
		tb.Fatal(err)
	}
}

// BenchmarkCommitBeside4000Read is the mailbox's part of sending to a
// session that has read 4,000 messages that day: Retain of a new message,
// a locked change with fsync, next to the same on an empty mailbox. The
// 4,000 are retained and acknowledged through the mailbox, so their
// tombstones and history lines are as a running session leaves them. One
// Retain on each in turn, so that a change of the machine's load falls on
// both, each first every other time; every 45 the unread records are
// dropped again (untimed). It
// reports the mean of each in µs and read/empty, their ratio. The files
// live in memory-backed storage where the system has it, so that what the
// mailbox does, not the disk's fsync, is measured.
func BenchmarkCommitBeside4000Read(b *testing.B) {
	const read = 4000
	type side struct {
		f    *fixture
		tmpl identity.Message
		took time.Duration
	}
	sides := make([]*side, 2)
	for i := range sides {
		f := newFixture(b)
		f.root = memoryDir(b)
		f.mb = f.open(b)
		s := &side{f: f, tmpl: f.message(b, msg{from: f.bob, id: "tmpl"})}
		if i == 1 {
			for j := 0; j < read; j += 100 {
				receipts := make([]Receipt, 0, 100)
				for k := j; k < j+100; k++ {
					m := s.tmpl
					m.MsgID = fmt.Sprintf("read-%06d", k)
					if _, err := f.mb.Retain(bg, m, "bob"); err != nil {
						b.Fatal(err)
					}
					receipts = append(receipts, receipt(m))
				}
				if n, err := f.mb.Acknowledge(receipts); err != nil || n != 100 {
					b.Fatalf("Acknowledge = %d, %v", n, err)
				}
			}
			if h, err := f.mb.History("bob", 0, false); err != nil || len(h) != read {
				b.Fatalf("History = %d records, %v; want %d", len(h), err, read)
			}
		}
		if err := statefile.WriteAtomic(f.mb.Path(), []byte(`{"records":[],"notice":null}`)); err != nil {
			b.Fatal(err)
		}
		sides[i] = s
	}
	n, unread := 0, 0
	for b.Loop() {
		if unread == 45 {
			for _, s := range sides {
				if err := statefile.WriteAtomic(s.f.mb.Path(), []byte(`{"records":[],"notice":null}`)); err != nil {
					b.Fatal(err)
				}
			}
			unread = 0
		}
		for i := range sides {
			s := sides[(i+n)%2] // each goes first every other time
			m := s.tmpl
			m.MsgID = fmt.Sprintf("m-%08d", n)
			start := time.Now()
			if added, err := s.f.mb.Retain(bg, m, "bob"); err != nil || !added {
				b.Fatalf("Retain = %v, %v", added, err)
			}
			s.took += time.Since(start)
		}
		n++
		unread++
	}
	b.ReportMetric(float64(sides[0].took.Microseconds())/float64(n), "empty-µs")
	b.ReportMetric(float64(sides[1].took.Microseconds())/float64(n), "read-µs")
	b.ReportMetric(float64(sides[1].took)/float64(sides[0].took), "read/empty")
}
