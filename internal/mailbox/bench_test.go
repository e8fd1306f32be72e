package mailbox

import (
	"fmt"
	"testing"
	"time"

	"github.com/interlink-go/interlink/internal/identity"

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

func BenchmarkRetain4000(b *testing.B) {
	f := newFixture(b)
	const base = 4000
	writeRecords(b, f, base)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if i == MaxRecords-base {
			b.StopTimer()
			writeRecords(b, f, base)
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
	if err := f.mb.Finish(bg, n.ID, StateInboxQueued); err != nil {
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
// another sender, as a flood leaves it. It reports the messages per second
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
		}
		if _, err := f.mb.Tombstones(); err != nil { // the log read once, as by a running server
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
