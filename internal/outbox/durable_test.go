package outbox_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/outbox"
	"github.com/interlink-go/interlink/internal/testutil"
)

// A message queued by one process and never sent is sent by the next
// process of the session, with the same msg_id, and every later process
// reads its outcome.
func TestPendingSurvivesTheProcess(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		root := t.TempDir()
		first := openAt(t, root, nil, nil) // never runs: it is killed before it could
		m1, m2 := newMessage(t, "one", time.Now()), newMessage(t, "two", time.Now())
		enqueue(t, first, routeTo("s1"), m1)
		enqueue(t, first, routeTo("s1"), m2)

		r := newFake("http://r1")
		second := openAt(t, root, []outbox.Sender{r}, nil)
		if p := pending(t, second); len(p) != 2 || p[0].MsgID != m1.MsgID || p[1].MsgID != m2.MsgID {
			t.Fatalf("the next process sees %+v pending, want both in order", p)
		}
		start(t, second)
		synctest.Wait()
		if got := r.order(routeTo("s1")); len(got) != 2 || got[0] != m1.MsgID || got[1] != m2.MsgID {
			t.Fatalf("sent %v, want %s then %s", got, m1.MsgID, m2.MsgID)
		}
		third := openAt(t, root, nil, nil)
		for _, id := range []string{m1.MsgID, m2.MsgID} {
			wantState(t, third, id, outbox.StateBusAccepted)
		}
		if p := pending(t, third); len(p) != 0 {
			t.Errorf("still listed as pending: %+v", p)
		}
	})
}

// Two processes of one session: only the one holding the sender lock
// sends, including what the other queued; when it stops, the other takes
// over. No message goes to a relay twice.
func TestOneSenderPerSession(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		root := t.TempDir()
		r := newFake("http://r1")
		a := openAt(t, root, []outbox.Sender{r}, nil)
		b := openAt(t, root, []outbox.Sender{r}, nil)
		stopA := start(t, a)
		synctest.Wait() // a holds the sender lock
		start(t, b)

		m1 := newMessage(t, "from b", time.Now())
		enqueue(t, b, routeTo("s1"), m1) // b queues, a sends
		time.Sleep(outbox.DefaultWatchEvery)
		synctest.Wait()
		wantState(t, b, m1.MsgID, outbox.StateBusAccepted)

		stopA()
		m2 := newMessage(t, "after the handover", time.Now())
		enqueue(t, b, routeTo("s1"), m2)
		time.Sleep(outbox.DefaultLockRetry + outbox.DefaultWatchEvery)
		synctest.Wait()
		wantState(t, b, m2.MsgID, outbox.StateBusAccepted)
		for _, id := range []string{m1.MsgID, m2.MsgID} {
			if n := len(r.calls(id)); n != 1 {
				t.Errorf("%s reached the relay %d times, want once", id, n)
			}
		}
	})
}

// The 1,025th pending message is refused with a clear error and nothing
// is written; once a relay took one, there is room for one more.
func TestFullAtMaxPending(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newFake("http://r1")
		taken := 0
		r.setReply(func(string, identity.Message) error {
			if taken == 0 {
				taken++
				return nil
			}
			return statusErr(503)
		})
		o := newOutbox(t, []outbox.Sender{r}, nil)
		// The first 1,023 in one write, to keep the test quick; the
		// 1,024th through Enqueue.
		var msgs []identity.Message
		for range outbox.MaxPending - 1 {
			msgs = append(msgs, newMessage(t, "x", time.Now()))
		}
		if err := outbox.Prefill(o, routeTo("s1"), "bob", msgs); err != nil {
			t.Fatal(err)
		}
		enqueue(t, o, routeTo("s2"), newMessage(t, "the 1,024th", time.Now()))
		before, err := os.ReadFile(o.Path())
		if err != nil {
			t.Fatal(err)
		}
		err = o.Enqueue(bg, routeTo("s2"), "bob", newMessage(t, "one too many", time.Now()))
		if !errors.Is(err, outbox.ErrFull) || !strings.Contains(err.Error(), "1024 messages are already waiting") {
			t.Fatalf("message %d: %v; want ErrFull saying how many wait", outbox.MaxPending+1, err)
		}
		after, err := os.ReadFile(o.Path())
		if err != nil {
			t.Fatal(err)
		}
		if string(before) != string(after) {
			t.Error("a refused message changed the outbox file")
		}

		start(t, o)
		synctest.Wait()
		if taken != 1 {
			t.Fatalf("the relay took %d messages, want 1", taken)
		}
		if err := o.Enqueue(bg, routeTo("s2"), "bob", newMessage(t, "room for one", time.Now())); err != nil {
			t.Errorf("after a relay took one: %v", err)
		}
		if err := o.Enqueue(bg, routeTo("s2"), "bob", newMessage(t, "and no more", time.Now())); !errors.Is(err, outbox.ErrFull) {
			t.Errorf("beyond the bound again: %v", err)
		}
	})
}

// A message no relay takes for ExpireAfter is expired: listed with the
// reason and not tried again.
func TestExpiry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newFake("http://r1")
		r.refuse(statusErr(503))
		o := newOutbox(t, []outbox.Sender{r}, &outbox.Options{ExpireAfter: time.Hour})
		start(t, o)
		m := newMessage(t, "late", time.Now())
		enqueue(t, o, routeTo("s1"), m)
		time.Sleep(time.Hour - time.Minute)
		synctest.Wait()
		wantState(t, o, m.MsgID, outbox.StatePending)
		time.Sleep(2 * time.Minute)
		synctest.Wait()
		e := wantState(t, o, m.MsgID, outbox.StateExpired)
		if !strings.Contains(e.LastError, "within 1h0m0s") {
			t.Errorf("reason %q", e.LastError)
		}
		calls := len(r.calls(m.MsgID))
		time.Sleep(time.Hour)
		synctest.Wait()
		if n := len(r.calls(m.MsgID)); n != calls {
			t.Errorf("an expired message was tried %d more times", n-calls)
		}
		if p := pending(t, o); len(p) != 1 || p[0].State != outbox.StateExpired {
			t.Errorf("list_pending shows %+v, want the expired message", p)
		}
	})
}

// Drain tries every DrainRetryEvery, so a relay that comes back during a
// shutdown's grace period gets the message from the stopping process.
func TestDrainSendsOnceTheRelayIsBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newFake("http://r1")
		r.refuse(statusErr(503))
		o := newOutbox(t, []outbox.Sender{r}, nil)
		start(t, o)
		m := newMessage(t, "last words", time.Now())
		enqueue(t, o, routeTo("s1"), m)
		synctest.Wait()

		ctx, cancel := context.WithTimeout(bg, 3*time.Second)
		defer cancel()
		left := make(chan int, 1)
		began := time.Now()
		go func() { left <- o.Drain(ctx) }()
		time.Sleep(time.Second)
		r.setReply(nil)
		if n := <-left; n != 0 {
			t.Fatalf("Drain left %d pending", n)
		}
		if d := time.Since(began); d > time.Second+2*outbox.DrainRetryEvery {
			t.Errorf("Drain took %v after the relay came back at 1s", d)
		}
		wantState(t, o, m.MsgID, outbox.StateBusAccepted)
	})
}

// A process that is not its session's sender does not wait in Drain: the
// messages are on disk, and the sender sends them.
func TestDrainReturnsAtOnceWithoutTheSenderLock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		root := t.TempDir()
		r := newFake("http://r1")
		r.refuse(statusErr(503))
		a := openAt(t, root, []outbox.Sender{r}, nil)
		b := openAt(t, root, []outbox.Sender{r}, nil)
		start(t, a)
		synctest.Wait()
		start(t, b)
		enqueue(t, b, routeTo("s1"), newMessage(t, "m", time.Now()))
		if n := b.Drain(bg); n != 1 {
			t.Errorf("Drain of the non-sender = %d, want 1 left at once", n)
		}
	})
}

// A file that is not an outbox is reported and never overwritten.
func TestCorruptFileKept(t *testing.T) {
	o := newOutbox(t, nil, nil)
	if err := os.MkdirAll(strings.TrimSuffix(o.Path(), "/me.json"), 0o700); err != nil {
		t.Fatal(err)
	}
	garbage := []byte(`{"messages":[{"msg_id":"x","route":"r","state":"sideways"}]}`)
	if err := os.WriteFile(o.Path(), garbage, 0o600); err != nil {
		t.Fatal(err)
	}
	err := o.Enqueue(bg, routeTo("s1"), "bob", newMessage(t, "m", time.Now()))
	if !errors.Is(err, outbox.ErrCorrupt) || !strings.Contains(err.Error(), "sideways") {
		t.Fatalf("Enqueue on a corrupt file: %v", err)
	}
	if _, _, err := o.Status("x"); !errors.Is(err, outbox.ErrCorrupt) {
		t.Errorf("Status on a corrupt file: %v", err)
	}
	if got, _ := os.ReadFile(o.Path()); string(got) != string(garbage) {
		t.Errorf("the corrupt file was changed to %s", got)
	}
}

// Enqueue waits for the file lock only as long as its context lives.
func TestEnqueueGivesUpOnTheLockWithItsContext(t *testing.T) {
	// The wait for the lock that Enqueue gave up on goes on in the
	// background until the test lets go of the lock, and may open the lock
	// file again meanwhile, so the folder is removed by a cleanup that
	// tries again rather than by t.TempDir, which would fail on a file
	// that appears while it removes the folder.
	root, err := os.MkdirTemp("", "outbox-lock-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		testutil.EventuallyNil(t, 10*time.Second, "the folder removed", func() error { return os.RemoveAll(root) })
	})
	o := openAt(t, root, nil, nil)
	enqueue(t, o, routeTo("s1"), newMessage(t, "first", time.Now())) // creates the folder
	unlock, err := lockFile(strings.TrimSuffix(o.Path(), ".json") + ".lock")
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	ctx, cancel := context.WithCancel(bg)
	cancel()
	if err := o.Enqueue(ctx, routeTo("s1"), "bob", newMessage(t, "m", time.Now())); !errors.Is(err, context.Canceled) {
		t.Errorf("Enqueue with the lock held and a cancelled context: %v", err)
	}
}
