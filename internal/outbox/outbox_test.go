package outbox_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/outbox"
	"github.com/interlink-go/interlink/internal/testutil"
)

func TestEnqueue(t *testing.T) {
	clk := newClock()
	o := newOutbox(t, nil, &outbox.Options{Now: clk.now})
	m := newMessage(t, "hi", testEpoch)
	clk.advance(time.Second)
	enqueue(t, o, routeTo("s1"), m)

	want := outbox.Entry{
		MsgID: m.MsgID, Peer: "bob", Route: routeTo("s1"), Text: "hi", TS: m.TS,
		QueuedAt: m.TS + 1000, State: outbox.StatePending,
	}
	if diff := cmp.Diff(want, status(t, o, m.MsgID)); diff != "" {
		t.Errorf("entry (-want +got):\n%s", diff)
	}
	if _, ok := lookup(t, o, "unknown"); ok {
		t.Error("Status of an unknown msg_id reports an entry")
	}

	for _, tc := range []struct {
		name  string
		route string
		m     identity.Message
		isDup bool
	}{
		{"duplicate msg_id", routeTo("s2"), m, true},
		{"empty route", "", newMessage(t, "x", testEpoch), false},
		{"empty msg_id", routeTo("s1"), identity.Message{Text: "x"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := o.Enqueue(bg, tc.route, "bob", tc.m)
			if err == nil {
				t.Fatal("Enqueue succeeded")
			}
			if got := errors.Is(err, outbox.ErrDuplicate); got != tc.isDup {
				t.Errorf("errors.Is(%v, ErrDuplicate) = %v, want %v", err, got, tc.isDup)
			}
		})
	}
	if p := pending(t, o); len(p) != 1 {
		t.Errorf("Pending() holds %d entries after refused enqueues, want 1", len(p))
	}
}

func TestLog(t *testing.T) {
	o := newOutbox(t, nil, nil)
	msg := func(id string, ts int64) identity.Message {
		return identity.Message{MsgID: id, Text: id, TS: uint64(ts)}
	}
	// Queued out of timestamp order; two share a timestamp.
	for _, q := range []struct {
		peer string
		m    identity.Message
	}{
		{"bob", msg("b3", 30)},
		{"bob", msg("b1", 10)},
		{"alice", msg("a1", 15)},
		{"bob", msg("b2z", 20)},
		{"bob", msg("b2a", 20)},
		{"self", msg("s1", 5)},
	} {
		if err := o.Enqueue(bg, routeTo("s1"), q.peer, q.m); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		peer  string
		limit int
		want  []string
	}{
		{"bob", 0, []string{"b1", "b2a", "b2z", "b3"}},
		{"bob", 2, []string{"b2z", "b3"}},
		{"bob", 100, []string{"b1", "b2a", "b2z", "b3"}},
		{"alice", 20, []string{"a1"}},
		{"self", 20, []string{"s1"}},
		{"carol", 20, nil},
	} {
		t.Run(fmt.Sprintf("%s/%d", tc.peer, tc.limit), func(t *testing.T) {
			var got []string
			for _, e := range logOf(t, o, tc.peer, tc.limit) {
				got = append(got, e.MsgID)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("Log(%q, %d) = %v, want %v", tc.peer, tc.limit, got, tc.want)
			}
		})
	}

	var queued []string
	for _, e := range pending(t, o) {
		queued = append(queued, e.MsgID)
	}
	if want := []string{"b3", "b1", "a1", "b2z", "b2a", "s1"}; !slices.Equal(queued, want) {
		t.Errorf("Pending() = %v, want queue order %v", queued, want)
	}
}

// The log keeps MaxFinished finished entries, evicting the one that
// finished first, and never evicts a pending one.
func TestLogBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newFake("http://r1")
		stuckRoute := routeTo("stuck")
		r.setReply(func(route string, _ identity.Message) error {
			if route == stuckRoute {
				return statusErr(503)
			}
			return nil
		})
		o := newOutbox(t, []outbox.Sender{r}, nil)
		ts := identity.Millis(time.Now())
		stuck := identity.Message{MsgID: "stuck", Text: "s", TS: ts}
		if err := o.Enqueue(bg, stuckRoute, "bob", stuck); err != nil {
			t.Fatal(err)
		}
		const extra = 10
		var ids []string
		for i := range outbox.MaxFinished + extra {
			m := identity.Message{MsgID: fmt.Sprintf("m%05d", i), Text: "x", TS: ts}
			ids = append(ids, m.MsgID)
			if err := o.Enqueue(bg, routeTo("s1"), "bob", m); err != nil {
				t.Fatal(err)
			}
		}
		start(t, o)
		synctest.Wait()

		for i, id := range ids {
			_, ok := lookup(t, o, id)
			if want := i >= extra; ok != want {
				t.Fatalf("Status(%s) found = %v, want %v", id, ok, want)
			}
		}
		wantState(t, o, "stuck", outbox.StatePending)
		if p := pending(t, o); len(p) != 1 || p[0].MsgID != "stuck" {
			t.Errorf("Pending() = %d entries, want only the stuck one", len(p))
		}
		if n := len(logOf(t, o, "bob", 0)); n != outbox.MaxFinished+1 {
			t.Errorf("Log holds %d entries, want %d", n, outbox.MaxFinished+1)
		}
		// An evicted msg_id is forgotten.
		if err := o.Enqueue(bg, routeTo("s1"), "bob", identity.Message{MsgID: ids[0], TS: ts}); err != nil {
			t.Errorf("Enqueue of an evicted msg_id: %v", err)
		}
		synctest.Wait()
		if _, ok := lookup(t, o, ids[extra]); ok {
			t.Errorf("Status(%s) still found after one more message finished", ids[extra])
		}
	})
}

// Replace puts a message in place of any entry with its msg_id, pending or
// finished, where Enqueue refuses the id; the new copy is pending, for its
// own route, and is the one sent.
func TestReplaceGivesWayToTheSameMsgID(t *testing.T) {
	relay := newFake("http://r")
	o := newOutbox(t, []outbox.Sender{relay}, &outbox.Options{RetryEvery: time.Hour})
	m := newMessage(t, "first", time.Now())
	enqueue(t, o, routeTo("s1"), m)
	if err := o.Enqueue(bg, routeTo("s2"), "bob", m); !errors.Is(err, outbox.ErrDuplicate) {
		t.Fatalf("Enqueue of the same msg_id = %v, want ErrDuplicate", err)
	}
	if err := o.Replace(bg, routeTo("s2"), "bob", "again", m); err != nil {
		t.Fatal(err)
	}
	if p := pending(t, o); len(p) != 1 || p[0].Route != routeTo("s2") || p[0].Text != "again" {
		t.Fatalf("pending after Replace = %+v, want the one copy for s2", p)
	}
	start(t, o)
	wantAccepted := func() bool { return status(t, o, m.MsgID).State == outbox.StateBusAccepted }
	testutil.Eventually(t, 10*time.Second, "the copy accepted", wantAccepted)
	if got := relay.calls(m.MsgID); len(got) != 1 || got[0].route != routeTo("s2") {
		t.Errorf("sent %+v, want once to s2", got)
	}
	// A finished entry gives way too: the message goes out again.
	if err := o.Replace(bg, routeTo("s3"), "bob", "third", m); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 10*time.Second, "the third copy sent", func() bool { return len(relay.calls(m.MsgID)) == 2 })
	if e := status(t, o, m.MsgID); e.Route != routeTo("s3") {
		t.Errorf("entry after the second Replace = %+v", e)
	}
}

// Withdraw takes back a pending message and nothing else: a finished
// entry stays in the log, and an unknown id is no error.
func TestWithdrawTakesBackOnlyAPendingMessage(t *testing.T) {
	relay := newFake("http://r")
	o := newOutbox(t, []outbox.Sender{relay}, nil)
	kept, gone := newMessage(t, "kept", time.Now()), newMessage(t, "gone", time.Now())
	enqueue(t, o, routeTo("s1"), kept)
	start(t, o)
	testutil.Eventually(t, 10*time.Second, "the first accepted", func() bool {
		return status(t, o, kept.MsgID).State == outbox.StateBusAccepted
	})
	if ok, err := o.Withdraw(bg, kept.MsgID); err != nil || ok {
		t.Errorf("Withdraw of a finished message = %v, %v; want false", ok, err)
	}
	if _, ok := lookup(t, o, kept.MsgID); !ok {
		t.Error("the finished entry left the log")
	}
	relay.refuse(statusErr(503))
	enqueue(t, o, routeTo("s1"), gone)
	if ok, err := o.Withdraw(bg, gone.MsgID); err != nil || !ok {
		t.Errorf("Withdraw of a pending message = %v, %v; want true", ok, err)
	}
	if _, ok := lookup(t, o, gone.MsgID); ok {
		t.Error("the withdrawn message is still in the outbox")
	}
	if ok, err := o.Withdraw(bg, "unknown"); err != nil || ok {
		t.Errorf("Withdraw of an unknown id = %v, %v", ok, err)
	}
}
