package outbox_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/interlink-go/interlink/internal/bus/bustest"
	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/outbox"
	"github.com/interlink-go/interlink/internal/relay"
	"github.com/interlink-go/interlink/internal/testutil"
)

// A message goes through a real bus unchanged and is then bus_accepted.
func TestDeliverEndToEnd(t *testing.T) {
	url := bustest.Start(t, nil)
	c := relay.New(url, nil)
	o := newOutbox(t, []outbox.Sender{c}, nil)
	start(t, o)
	m := newMessage(t, "hello \u00e9 <b>", time.Now())
	enqueue(t, o, routeTo("s1"), m)

	d, err := c.Recv(t.Context(), routeTo("s1"), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if !d.HasMessage {
		t.Fatal("Recv: no message")
	}
	want, err := m.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	// The relay client may re-escape the JSON text (as \u003c for <), so
	// the payload is compared as JSON values.
	var gotJSON, wantJSON any
	if err := json.Unmarshal(d.Payload, &gotJSON); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(want, &wantJSON); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(wantJSON, gotJSON); diff != "" {
		t.Errorf("payload on the bus (-sent +got):\n%s", diff)
	}
	got, err := identity.DecodeMessage(d.Payload)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(m, got); diff != "" {
		t.Errorf("message on the bus (-sent +got):\n%s", diff)
	}

	// The state changes right after the relay's reply reaches the worker.
	testutil.Eventually(t, 10*time.Second, "the message out of pending", func() bool {
		return status(t, o, m.MsgID).State != outbox.StatePending
	})
	e := wantState(t, o, m.MsgID, outbox.StateBusAccepted)
	wantEntry := outbox.Entry{
		MsgID: m.MsgID, Peer: "bob", Route: routeTo("s1"), Text: m.Text, TS: m.TS,
		State: outbox.StateBusAccepted, Attempts: 1, AcceptedBy: []string{url},
	}
	if diff := cmp.Diff(wantEntry, e, cmpIgnoreFields("QueuedAt", "FinishedAt")); diff != "" {
		t.Errorf("entry (-want +got):\n%s", diff)
	}
	if e.QueuedAt < m.TS || e.FinishedAt < e.QueuedAt {
		t.Errorf("queued at %d, finished at %d, signed at %d", e.QueuedAt, e.FinishedAt, m.TS)
	}
	if p := pending(t, o); len(p) != 0 {
		t.Errorf("Pending() = %v, want none", p)
	}
}

// A bus that is down keeps the message pending; it is delivered by the
// first retry after the bus comes back, RetryEvery later.
func TestRetryUntilAccepted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newFake("http://r1")
		r.refuse(statusErr(503))
		o := newOutbox(t, []outbox.Sender{r}, nil)
		start(t, o)
		m := newMessage(t, "hi", time.Now())
		enqueue(t, o, routeTo("s1"), m)
		synctest.Wait()

		e := wantState(t, o, m.MsgID, outbox.StatePending)
		if e.Attempts != 1 || !strings.Contains(e.LastError, "503") {
			t.Errorf("after one attempt: attempts %d, last error %q; want 1 and a 503", e.Attempts, e.LastError)
		}
		if p := pending(t, o); len(p) != 1 || p[0].MsgID != m.MsgID {
			t.Errorf("Pending() = %v, want only %s", p, m.MsgID)
		}

		time.Sleep(outbox.DefaultRetryEvery - time.Second)
		synctest.Wait()
		if n := len(r.calls(m.MsgID)); n != 1 {
			t.Fatalf("%d sends before the retry interval, want 1", n)
		}
		r.setReply(nil)
		time.Sleep(time.Second)
		synctest.Wait()

		e = wantState(t, o, m.MsgID, outbox.StateBusAccepted)
		if e.Attempts != 2 || e.LastError != "" || !slices.Equal(e.AcceptedBy, []string{"http://r1"}) {
			t.Errorf("accepted entry = %+v", e)
		}
		if p := pending(t, o); len(p) != 0 {
			t.Errorf("Pending() = %v, want none", p)
		}
	})
}

// With two relays, one accepting ends the message; the failing one is not
// tried again for it.
func TestFailedRelayNotRetried(t *testing.T) {
	for _, tc := range []struct {
		name       string
		failsFirst bool
	}{
		{"failing relay first", true},
		{"failing relay second", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				bad, good := newFake("http://bad"), newFake("http://good")
				bad.refuse(statusErr(503))
				relays := []outbox.Sender{good, bad}
				if tc.failsFirst {
					relays = []outbox.Sender{bad, good}
				}
				o := newOutbox(t, relays, nil)
				start(t, o)
				m := newMessage(t, "hi", time.Now())
				enqueue(t, o, routeTo("s1"), m)
				synctest.Wait()
				e := wantState(t, o, m.MsgID, outbox.StateBusAccepted)
				if !slices.Equal(e.AcceptedBy, []string{"http://good"}) {
					t.Errorf("AcceptedBy = %v, want only the good relay", e.AcceptedBy)
				}

				time.Sleep(10 * outbox.DefaultRetryEvery)
				synctest.Wait()
				if nb, ng := len(bad.calls(m.MsgID)), len(good.calls(m.MsgID)); nb != 1 || ng != 1 {
					t.Errorf("sends: failing relay %d, accepting relay %d; want 1 each", nb, ng)
				}
			})
		})
	}
}

// Only a permanent refusal by every relay rejects a message.
func TestRejection(t *testing.T) {
	transport := errors.New("relay: send request failed: connection refused")
	for _, tc := range []struct {
		name    string
		errs    []error
		want    outbox.State
		reasons []string
	}{
		{"every relay 4xx", []error{statusErr(413), statusErr(400)}, outbox.StateRejected, []string{"413", "400"}},
		{"single relay 404", []error{statusErr(404)}, outbox.StateRejected, []string{"404"}},
		{"4xx and 503", []error{statusErr(413), statusErr(503)}, outbox.StatePending, []string{"413", "503"}},
		{"408 and 429", []error{statusErr(408), statusErr(429)}, outbox.StatePending, []string{"408", "429"}},
		{"4xx and transport failure", []error{transport, statusErr(400)}, outbox.StatePending, []string{"connection refused", "400"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var relays []outbox.Sender
				var fakes []*fakeRelay
				for i, err := range tc.errs {
					f := newFake("http://r" + string(rune('1'+i)))
					f.setReply(func(_ string, m identity.Message) error {
						if m.Text == "bad" {
							return err
						}
						return nil
					})
					relays = append(relays, f)
					fakes = append(fakes, f)
				}
				o := newOutbox(t, relays, nil)
				bad := newMessage(t, "bad", time.Now())
				next := newMessage(t, "good", time.Now())
				enqueue(t, o, routeTo("s1"), bad)
				enqueue(t, o, routeTo("s1"), next)
				start(t, o)
				synctest.Wait()

				e := wantState(t, o, bad.MsgID, tc.want)
				for _, r := range tc.reasons {
					if !strings.Contains(e.LastError, r) {
						t.Errorf("LastError = %q, want it to mention %q", e.LastError, r)
					}
				}
				var listed []string
				for _, e := range pending(t, o) {
					listed = append(listed, e.MsgID+" "+string(e.State))
				}
				wantPending := []string{bad.MsgID + " " + string(tc.want)}
				if tc.want == outbox.StatePending {
					// The next message waits behind it.
					wantPending = append(wantPending, next.MsgID+" pending")
				}
				if !slices.Equal(listed, wantPending) {
					t.Errorf("Pending() = %v, want %v", listed, wantPending)
				}

				time.Sleep(10 * outbox.DefaultRetryEvery)
				synctest.Wait()
				wantCalls := 11 // the first attempt and ten retries
				if tc.want == outbox.StateRejected {
					// A rejected message leaves the queue, so the next
					// one goes at once.
					wantCalls = 1
					wantState(t, o, next.MsgID, outbox.StateBusAccepted)
				} else {
					wantState(t, o, next.MsgID, outbox.StatePending)
				}
				for _, f := range fakes {
					if n := len(f.calls(bad.MsgID)); n != wantCalls {
						t.Errorf("%s: %d sends, want %d", f.url, n, wantCalls)
					}
				}
			})
		})
	}
}

// A relay's error text is cleaned of control characters and bounded.
func TestErrorTextCleaned(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newFake("http://r1")
		r.refuse(errors.New("bad\nline\x1b[31m\u202e" + strings.Repeat("x", 5000)))
		o := newOutbox(t, []outbox.Sender{r}, nil)
		start(t, o)
		m := newMessage(t, "hi", time.Now())
		enqueue(t, o, routeTo("s1"), m)
		synctest.Wait()
		e := wantState(t, o, m.MsgID, outbox.StatePending)
		if strings.ContainsAny(e.LastError, "\n\x1b\u202e") {
			t.Errorf("LastError keeps control characters: %q", e.LastError[:40])
		}
		if !strings.HasPrefix(e.LastError, "badline[31m") || len(e.LastError) > 600 {
			t.Errorf("LastError = %q... (%d bytes), want a cleaned prefix of at most 600 bytes", e.LastError[:20], len(e.LastError))
		}
	})
}

// A route whose head no relay takes does not hold back other routes.
func TestRoutesIndependent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newFake("http://r1")
		blocked := routeTo("a")
		r.setReply(func(route string, _ identity.Message) error {
			if route == blocked {
				return statusErr(503)
			}
			return nil
		})
		o := newOutbox(t, []outbox.Sender{r}, nil)
		a1, b1 := newMessage(t, "a1", time.Now()), newMessage(t, "b1", time.Now())
		a2, b2 := newMessage(t, "a2", time.Now()), newMessage(t, "b2", time.Now())
		enqueue(t, o, blocked, a1)
		enqueue(t, o, routeTo("b"), b1)
		enqueue(t, o, blocked, a2)
		enqueue(t, o, routeTo("b"), b2)
		start(t, o)
		synctest.Wait()

		wantState(t, o, b1.MsgID, outbox.StateBusAccepted)
		wantState(t, o, b2.MsgID, outbox.StateBusAccepted)
		wantState(t, o, a1.MsgID, outbox.StatePending)
		if e := wantState(t, o, a2.MsgID, outbox.StatePending); e.Attempts != 0 {
			t.Errorf("a2 tried %d times behind a blocked head, want 0", e.Attempts)
		}

		// A message for route b does not wake route a's worker.
		b3 := newMessage(t, "b3", time.Now())
		enqueue(t, o, routeTo("b"), b3)
		synctest.Wait()
		wantState(t, o, b3.MsgID, outbox.StateBusAccepted)
		if n := len(r.calls(a1.MsgID)); n != 1 {
			t.Errorf("a1 sent %d times, want 1", n)
		}

		r.setReply(nil)
		time.Sleep(outbox.DefaultRetryEvery)
		synctest.Wait()
		wantState(t, o, a1.MsgID, outbox.StateBusAccepted)
		wantState(t, o, a2.MsgID, outbox.StateBusAccepted)
		if got, want := r.order(blocked), []string{a1.MsgID, a1.MsgID, a2.MsgID}; !slices.Equal(got, want) {
			t.Errorf("sends to route a = %v, want %v", got, want)
		}
	})
}

// A new message for a route wakes its waiting worker, which retries the
// head at once.
func TestEnqueueWakesRoute(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newFake("http://r1")
		r.refuse(statusErr(503))
		o := newOutbox(t, []outbox.Sender{r}, nil)
		start(t, o)
		m1 := newMessage(t, "one", time.Now())
		enqueue(t, o, routeTo("s1"), m1)
		synctest.Wait()
		time.Sleep(time.Second)
		r.setReply(nil)
		m2 := newMessage(t, "two", time.Now())
		enqueue(t, o, routeTo("s1"), m2)
		synctest.Wait()
		wantState(t, o, m1.MsgID, outbox.StateBusAccepted)
		wantState(t, o, m2.MsgID, outbox.StateBusAccepted)
	})
}

// Messages to one route arrive in the order they were queued, even when the
// head needs a retry and the relay is slow.
func TestFIFOWithinRoute(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newFake("http://r1")
		r.delay = time.Second
		var first string
		failedOnce := false
		r.setReply(func(_ string, m identity.Message) error {
			if m.MsgID == first && !failedOnce {
				failedOnce = true
				return statusErr(503)
			}
			return nil
		})
		o := newOutbox(t, []outbox.Sender{r}, nil)
		want := map[string][]string{}
		queue := func(route string) {
			m := newMessage(t, "m", time.Now())
			enqueue(t, o, route, m)
			want[route] = append(want[route], m.MsgID)
		}
		// Some messages are queued before Run starts, some while it runs.
		for range 5 {
			queue(routeTo("r"))
			queue(routeTo("s"))
		}
		r.mu.Lock()
		first = want[routeTo("r")][0]
		r.mu.Unlock()
		start(t, o)
		for range 5 {
			time.Sleep(300 * time.Millisecond)
			queue(routeTo("s"))
			queue(routeTo("r"))
		}
		time.Sleep(time.Minute)
		synctest.Wait()

		wantR := append([]string{first}, want[routeTo("r")]...)
		if got := r.order(routeTo("r")); !slices.Equal(got, wantR) {
			t.Errorf("route r order:\n got %v\nwant %v", got, wantR)
		}
		if got := r.order(routeTo("s")); !slices.Equal(got, want[routeTo("s")]) {
			t.Errorf("route s order:\n got %v\nwant %v", got, want[routeTo("s")])
		}
	})
}

// A message unsent for longer than ResignAfter goes out signed anew: same
// msg_id and fields, a fresh timestamp, a valid signature.
func TestResignOldMessage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := newClock()
		r := newFake("http://r1")
		r.refuse(statusErr(503))
		o := newOutbox(t, []outbox.Sender{r}, &outbox.Options{Now: clk.now})
		start(t, o)
		m := newMessage(t, "old news", clk.now())
		orig := m
		original, err := m.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		enqueue(t, o, routeTo("s1"), m)
		synctest.Wait()

		// Exactly ResignAfter old is still sent as it is.
		clk.advance(outbox.DefaultResignAfter)
		time.Sleep(outbox.DefaultRetryEvery)
		synctest.Wait()
		clk.advance(time.Second)
		time.Sleep(outbox.DefaultRetryEvery)
		synctest.Wait()
		// The re-signed copy is kept for later attempts.
		clk.advance(time.Hour)
		r.setReply(nil)
		time.Sleep(outbox.DefaultRetryEvery)
		synctest.Wait()

		calls := r.calls(m.MsgID)
		if len(calls) != 4 {
			t.Fatalf("%d sends, want 4", len(calls))
		}
		for i, c := range calls[:2] {
			if !bytes.Equal(c.payload, original) {
				t.Errorf("send %d changed the message before it was %v old:\n%s", i, outbox.DefaultResignAfter, c.payload)
			}
		}
		if !bytes.Equal(calls[3].payload, calls[2].payload) {
			t.Errorf("the re-signed copy changed again:\n%s\n%s", calls[2].payload, calls[3].payload)
		}
		got := calls[2].msg
		wantTS := identity.Millis(testEpoch.Add(outbox.DefaultResignAfter + time.Second))
		if got.TS != wantTS {
			t.Errorf("re-signed ts = %d, want %d", got.TS, wantTS)
		}
		if _, err := got.Verify(); err != nil {
			t.Errorf("re-signed message does not verify: %v", err)
		}
		if diff := cmp.Diff(m, got, cmpIgnoreFields("TS", "Sig")); diff != "" {
			t.Errorf("re-signed message differs beyond ts and sig (-orig +got):\n%s", diff)
		}
		if got.Sig == m.Sig {
			t.Error("re-signed message kept the old signature")
		}

		if diff := cmp.Diff(orig, m); diff != "" {
			t.Errorf("the caller's message changed:\n%s", diff)
		}
		if _, err := m.Verify(); err != nil {
			t.Errorf("original no longer verifies: %v", err)
		}
		e := wantState(t, o, m.MsgID, outbox.StateBusAccepted)
		if e.TS != m.TS || e.Attempts != 4 {
			t.Errorf("entry ts %d attempts %d, want the original ts %d and 4", e.TS, e.Attempts, m.TS)
		}
	})
}

// cmpIgnoreFields ignores the struct fields with the given names.
func cmpIgnoreFields(names ...string) cmp.Option {
	return cmp.FilterPath(func(p cmp.Path) bool {
		sf, ok := p.Last().(cmp.StructField)
		return ok && slices.Contains(names, sf.Name())
	}, cmp.Ignore())
}

// No message is ever in flight twice, whatever the mix of slow relays,
// retries, wake-ups and restarts of Run.
func TestNoConcurrentSend(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		shared := &tracker{}
		r1, r2 := newFake("http://r1"), newFake("http://r2")
		for _, r := range []*fakeRelay{r1, r2} {
			r.track = shared
			r.delay = 7 * time.Second // longer than RetryEvery
			r.refuse(statusErr(503))
		}
		o := newOutbox(t, []outbox.Sender{r1, r2}, nil)
		stop := start(t, o)
		var ids []string
		for i := range 6 {
			m := newMessage(t, "m", time.Now())
			ids = append(ids, m.MsgID)
			enqueue(t, o, routeTo(string(rune('a'+i%2))), m)
			time.Sleep(3 * time.Second)
		}
		if err := o.Run(t.Context()); !errors.Is(err, outbox.ErrRunning) {
			t.Errorf("second Run = %v, want ErrRunning", err)
		}
		time.Sleep(20 * time.Second)
		stop() // in the middle of sends
		start(t, o)
		time.Sleep(30 * time.Second)
		r1.setReply(nil)
		time.Sleep(3 * time.Minute)
		synctest.Wait()

		for _, id := range ids {
			wantState(t, o, id, outbox.StateBusAccepted)
		}
		if n := shared.overlapCount(); n != 0 {
			t.Errorf("%d overlapping sends of one message", n)
		}
	})
}

// Run returns once its context ends, leaving no goroutine behind (synctest
// fails the test if one is left), and a later Run resumes the queues.
func TestRunStops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newFake("http://r1")
		r.delay = 2 * time.Second
		r.refuse(statusErr(503))
		o := newOutbox(t, []outbox.Sender{r}, nil)
		var ids []string
		for i := range 8 {
			m := newMessage(t, "m", time.Now())
			ids = append(ids, m.MsgID)
			enqueue(t, o, routeTo(string(rune('a'+i))), m)
		}
		stop := start(t, o)
		time.Sleep(3 * time.Second) // workers wait between attempts
		stop()
		stop = start(t, o)
		time.Sleep(time.Second) // workers are sending
		stop()
		for _, id := range ids {
			wantState(t, o, id, outbox.StatePending)
		}

		r.setReply(nil)
		start(t, o)
		time.Sleep(10 * time.Second)
		synctest.Wait()
		for _, id := range ids {
			wantState(t, o, id, outbox.StateBusAccepted)
		}
	})
}

// With no relay configured a message stays pending and says why.
func TestNoRelays(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o := newOutbox(t, nil, nil)
		start(t, o)
		m := newMessage(t, "hi", time.Now())
		enqueue(t, o, routeTo("s1"), m)
		synctest.Wait()
		e := wantState(t, o, m.MsgID, outbox.StatePending)
		if e.LastError == "" {
			t.Error("LastError is empty")
		}
	})
}
