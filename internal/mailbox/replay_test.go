package mailbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/interlink-go/interlink/internal/identity"
)

// flood retains n messages built by next from the signer's own share and
// returns how many were refused as over the share. It stops at any other
// error.
func flood(tb testing.TB, f *fixture, n int, next func(i int) identity.Message) (refused int) {
	tb.Helper()
	for i := range n {
		m := next(i)
		_, err := f.mb.Retain(bg, m, f.peerOf(m))
		switch {
		case errors.Is(err, ErrOverShare):
			refused++
		case err != nil:
			tb.Fatalf("message %d: %v", i, err)
		}
	}
	return refused
}

// consumed retains m from bob and acknowledges it, as a session that read
// it would, and returns it.
func consumed(tb testing.TB, f *fixture, m msg) identity.Message {
	tb.Helper()
	m.from = f.bob
	im := f.retain(tb, m)
	if n, err := f.mb.Acknowledge([]Receipt{receipt(im)}); err != nil || n != 1 {
		tb.Fatalf("Acknowledge = %d, %v", n, err)
	}
	return im
}

// appendLog appends n tombstones made by tomb to the tombstone log, as
// the mailbox would have written them.
func appendLog(tb testing.TB, f *fixture, n int, tomb func(i int) Tombstone) {
	tb.Helper()
	var buf []byte
	for i := range n {
		t := tomb(i)
		buf = appendTombstone(buf, &t)
	}
	if err := os.MkdirAll(filepath.Dir(f.logPath()), 0o700); err != nil {
		tb.Fatal(err)
	}
	fh, err := os.OpenFile(f.logPath(), os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o600)
	if err != nil {
		tb.Fatal(err)
	}
	defer fh.Close()
	if _, err := fh.Write(buf); err != nil {
		tb.Fatal(err)
	}
}

// After a task's result, a peer sends more updates for the task than the
// mailbox keeps tombstones of one sender, each signed after the result.
// (Most of the flood is written to the log directly, as the mailbox writes
// it; the last of it goes through Retain.) A message another peer sent and
// the session consumed before is still refused when a bus client posts it
// again, also after a restart: no sender's messages push another's out of
// the replay state. The flooding sender is refused once its share is
// used, and the other peer is still heard.
func TestFloodOfLateUpdatesKeepsAnotherSendersReplayState(t *testing.T) {
	f := newFixture(t)
	f.root = memoryDir(t)
	f.mb = f.open(t)
	read := consumed(t, f, msg{id: "from-bob"})
	res := f.retain(t, msg{id: "result", task: "t", status: identity.StatusResult})
	if _, err := f.mb.Acknowledge([]Receipt{receipt(res)}); err != nil {
		t.Fatal(err)
	}
	tmpl := f.message(t, msg{id: "tmpl", task: "t", status: identity.StatusUpdate, ts: time.Second})
	const direct = MaxTombstones - 64
	appendLog(t, f, direct, func(i int) Tombstone {
		m := tmpl
		m.MsgID = fmt.Sprintf("late-%06d", i)
		r := Record{Message: m, SupersededBy: res.MsgID}
		return tombstoneOf(&r)
	})
	refused := flood(t, f, 128, func(i int) identity.Message {
		m := tmpl // Retain checks no signature; only the id changes
		m.MsgID = fmt.Sprintf("late-%06d", direct+i)
		return m
	})
	if refused == 0 {
		t.Error("every late update was kept: the sender's replay state is unbounded")
	}
	if added, err := f.mb.Retain(bg, read, "bob"); err != nil || added {
		t.Errorf("a copy of bob's consumed message after the flood = %v, %v; want it recognised", added, err)
	}
	if added, err := f.open(t).Retain(bg, read, "bob"); err != nil || added {
		t.Errorf("the same after a restart = %v, %v; want it recognised", added, err)
	}
	f.retain(t, msg{from: f.bob, id: "bob-still-heard", ts: 2 * time.Second})
}

// floodFrom fills the share of the signer from in the replay state: its
// tombstones as written by the mailbox, all but the last few of its share,
// then the rest through Retain and Acknowledge, as a session reading a
// peer's flood of distinct messages would. It returns how many were
// refused as over the share.
func floodFrom(tb testing.TB, f *fixture, from *identity.Signer) (refused int) {
	tb.Helper()
	const direct = MaxTombstones - 32
	tmpl := f.message(tb, msg{from: from, id: "tmpl"})
	appendLog(tb, f, direct, func(i int) Tombstone {
		r := Record{Message: tmpl, State: StateAcknowledged}
		r.Message.MsgID = fmt.Sprintf("flood-%06d", i)
		return tombstoneOf(&r)
	})
	for i := range 64 {
		m := tmpl
		m.MsgID = fmt.Sprintf("flood-%06d", direct+i)
		_, err := f.mb.Retain(bg, m, f.peerOf(m))
		switch {
		case errors.Is(err, ErrOverShare):
			refused++
			continue
		case err != nil:
			tb.Fatal(err)
		}
		if _, err := f.mb.Acknowledge([]Receipt{receipt(m)}); err != nil {
			tb.Fatal(err)
		}
	}
	return refused
}

// A flood of distinct messages, each read and acknowledged, from a peer
// or from a sibling session of this identity, cannot push another
// sender's tombstone out: the flooding sender is refused once its share of
// the replay window is used.
func TestFloodOfReadMessagesKeepsAnotherSendersReplayState(t *testing.T) {
	for _, who := range []string{"peer", "own identity"} {
		t.Run(who, func(t *testing.T) {
			f := newFixture(t)
			f.root = memoryDir(t)
			f.mb = f.open(t)
			from := f.alice
			if who == "own identity" {
				from = f.me
			}
			read := consumed(t, f, msg{id: "from-bob"})
			if refused := floodFrom(t, f, from); refused != 32 {
				t.Errorf("%d messages refused, want the 32 beyond the share", refused)
			}
			if added, err := f.mb.Retain(bg, read, "bob"); err != nil || added {
				t.Errorf("a copy of bob's consumed message after the flood = %v, %v; want it recognised", added, err)
			}
			if added, err := f.open(t).Retain(bg, read, "bob"); err != nil || added {
				t.Errorf("the same after a restart = %v, %v; want it recognised", added, err)
			}
			tombs, err := f.mb.Tombstones()
			if err != nil || len(tombs) != MaxTombstones+1 {
				t.Errorf("%d tombstones, %v; want the whole share and bob's", len(tombs), err)
			}
			f.retain(t, msg{from: f.bob, id: "bob-still-heard"})
		})
	}
}

// A sender whose share of the replay window is used gets it back as its
// messages leave the window, and not before; the log is compacted when
// they do.
func TestReplayShareComesBackWithTheWindow(t *testing.T) {
	f := newFixture(t)
	f.root = memoryDir(t)
	f.mb = f.open(t)
	floodFrom(t, f, f.alice)
	next := f.message(t, msg{id: "next", ts: 24 * time.Hour})
	f.clock.Set(baseTime.Add(24 * time.Hour))
	if _, err := f.mb.Retain(bg, next, "alice"); !errors.Is(err, ErrOverShare) {
		t.Fatalf("Retain at the edge of the window = %v, want ErrOverShare", err)
	}
	f.clock.Add(time.Millisecond)
	before, _ := os.Stat(f.logPath())
	if added, err := f.mb.Retain(bg, next, "alice"); err != nil || !added {
		t.Fatalf("Retain once the flood left the window = %v, %v", added, err)
	}
	if _, err := f.mb.Acknowledge([]Receipt{receipt(next)}); err != nil {
		t.Fatal(err)
	}
	after, _ := os.Stat(f.logPath())
	if os.SameFile(before, after) {
		t.Error("the log was not compacted once the flood left the window")
	}
	if tombs, err := f.mb.Tombstones(); err != nil || len(tombs) != 1 {
		t.Errorf("%d tombstones, %v; want only the new one", len(tombs), err)
	}
}

// Updates that arrive superseded by a final status signed no earlier, or
// by an update signed later, leave nothing in the replay state, however
// many arrive, and each is still recognised as superseded.
func TestUpdatesArrivingSupersededCostNothing(t *testing.T) {
	for _, by := range []identity.Status{identity.StatusResult, identity.StatusUpdate} {
		t.Run(string(by), func(t *testing.T) {
			f := newFixture(t)
			last := f.retain(t, msg{id: "last", task: "t", status: by, ts: time.Hour})
			if _, err := f.mb.Acknowledge([]Receipt{receipt(last)}); err != nil {
				t.Fatal(err)
			}
			before, err := os.ReadFile(f.logPath())
			if err != nil {
				t.Fatal(err)
			}
			tmpl := f.message(t, msg{id: "tmpl", task: "t", status: identity.StatusUpdate})
			for i := range 2000 {
				m := tmpl
				m.MsgID = fmt.Sprintf("early-%06d", i)
				m.TS += uint64(i)
				if added, err := f.mb.Retain(bg, m, "alice"); err != nil || added {
					t.Fatalf("update %d = %v, %v; want it dropped as superseded", i, added, err)
				}
			}
			after, _ := os.ReadFile(f.logPath())
			if string(before) != string(after) {
				t.Errorf("superseded updates grew the log from %d to %d bytes", len(before), len(after))
			}
			if recs := f.records(t); len(recs) != 0 {
				t.Errorf("%d unread records, want none", len(recs))
			}
		})
	}
}
