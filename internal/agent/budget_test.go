package agent_test

import (
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/interlink-go/interlink/internal/agent"
	"github.com/interlink-go/interlink/internal/agent/agenttest"
	"github.com/interlink-go/interlink/internal/budget"
	"github.com/interlink-go/interlink/internal/delivery"
	"github.com/interlink-go/interlink/internal/testutil"
)

// responder plays a model told to answer every message: each time its host
// is woken with an inbox notice, it fetches, acknowledges and answers the
// other side.
type responder struct {
	n       *agenttest.Node
	to      string // petname of the other side
	seen    int    // sink records handled so far
	woken   int    // inbox notices acted on
	pauses  []delivery.Record
	replied []string // msg_ids of the answers sent
}

// step handles what the host was given since the last step, and reports
// whether the model was woken.
func (r *responder) step(t *testing.T) bool {
	t.Helper()
	recs := r.n.Sink.Records()
	woken := false
	for _, rec := range recs[r.seen:] {
		switch {
		case strings.Contains(rec.Content, "Wake-ups from"):
			r.pauses = append(r.pauses, rec)
		case strings.Contains(rec.Content, "[Interlink inbox notice]"):
			woken = true
		}
	}
	r.seen = len(recs)
	if !woken {
		return false
	}
	r.woken++
	got := r.n.OK("receive_messages", nil)
	receipts := testutil.Receipts(t, got)
	if len(receipts) == 0 {
		return true
	}
	args := make([]any, len(receipts))
	for i, rc := range receipts {
		args[i] = rc
	}
	r.n.OK("acknowledge_messages", map[string]any{"messages": args})
	sent := r.n.OK("send_message", map[string]any{"to": r.to, "text": "answer " + got[len(got)-8:]})
	r.replied = append(r.replied, agenttest.MsgID(t, sent))
	return true
}

// Two sessions that answer each other stop once each has been woken as
// often as the wake budget allows: each gets exactly one notice that the
// other is paused, the last answer waits unread without waking anyone, and
// the operator's turn makes it wake the session again.
func TestARunawayExchangeStopsAtTheWakeBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		url, _ := agenttest.StartMemBus(t, nil)
		alice, bob := agenttest.Pair(t)
		wake := budget.Limit{N: 3, Per: 10 * time.Minute}
		edit := func(c *agent.Config) { c.WakeBudget, c.SendBudget = wake, budget.DefaultSend }
		a := &responder{n: agenttest.Start(t, alice, "a1", []string{url}, &agenttest.Options{Edit: edit}), to: "bob"}
		b := &responder{n: agenttest.Start(t, bob, "b1", []string{url}, &agenttest.Options{Edit: edit}), to: "alice"}
		synctest.Wait()

		a.n.OK("send_message", map[string]any{"to": "bob", "text": "shall we talk all night?"})
		for quiet := 0; quiet < 3; {
			agenttest.Elapse(time.Second)
			if a.step(t) || b.step(t) {
				quiet = 0
			} else {
				quiet++
			}
		}
		// Give the notifiers all the time in the world: nobody is woken.
		agenttest.Elapse(5 * time.Minute)
		if a.step(t) || b.step(t) {
			t.Fatal("a session was woken after both had paused the other")
		}

		for _, r := range []*responder{a, b} {
			if r.woken != wake.N {
				t.Errorf("%s was woken %d times, want %d", r.to, r.woken, wake.N)
			}
			if len(r.pauses) != 1 {
				t.Errorf("the session answering %s got %d pause notices, want 1", r.to, len(r.pauses))
				continue
			}
			p := r.pauses[0]
			if p.Sender != "Interlink" || !strings.Contains(p.Content, `Wake-ups from "`+r.to+`" are paused`) ||
				!strings.Contains(p.Content, "next prompt resumes") {
				t.Errorf("pause notice = %+v", p)
			}
			if got := r.n.OK("list_peers", nil); !strings.Contains(got, r.to+" → ") || !strings.Contains(got, "wake-ups paused since") {
				t.Errorf("list_peers does not show %s paused:\n%s", r.to, got)
			}
		}
		// alice answered bob's last message after bob had paused her: it is
		// in bob's mailbox, unread, announced to nobody.
		last := a.replied[len(a.replied)-1]
		recs := b.n.Records()
		if len(recs) != 1 || recs[0].Message.MsgID != last {
			t.Fatalf("bob's unread messages: %v, want alice's last answer %s", recs, last)
		}
		if got := b.n.OK("receive_messages", nil); !strings.Contains(got, last) {
			t.Errorf("receive_messages does not list the waiting message:\n%s", got)
		}

		// bob's operator writes a prompt: what interlink-mcp turn records.
		if err := budget.RecordTurn(b.n.Root, "b1", time.Now()); err != nil {
			t.Fatal(err)
		}
		agenttest.Elapse(time.Minute)
		if !b.step(t) {
			t.Error("the operator's turn did not resume bob's wake-ups")
		}
		if got := b.n.OK("list_peers", nil); strings.Contains(got, "paused") {
			t.Errorf("list_peers still shows a pause after the operator's turn:\n%s", got)
		}
	})
}

// A session that keeps sending to one peer is stopped at the send budget
// with an error telling the model to ask its operator; the operator's turn
// lifts it.
func TestSendsStopAtTheSendBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		url, _ := agenttest.StartMemBus(t, nil)
		alice, bob := agenttest.Pair(t)
		send := budget.Limit{N: 4, Per: 10 * time.Minute}
		a := agenttest.Start(t, alice, "a1", []string{url}, &agenttest.Options{Edit: func(c *agent.Config) { c.SendBudget = send }})
		agenttest.Start(t, bob, "b1", []string{url}, nil)
		synctest.Wait()
		// Three messages and ten progress updates of one task, which count
		// once: four sends.
		for i := range send.N - 1 {
			a.OK("send_message", map[string]any{"to": "bob", "text": "one more"})
			if i == 0 {
				// Progress updates of one task count once.
				for range 10 {
					a.OK("send_message", map[string]any{"to": "bob", "text": "still going", "task_id": "t1", "status": "update"})
				}
			}
		}
		msg := a.RPCErr("send_message", map[string]any{"to": "bob", "text": "too many"})
		for _, want := range []string{"not sent", "5th message to \"bob\" within 10m", "send budget allows (4/10m)", "ask your operator"} {
			if !strings.Contains(msg, want) {
				t.Errorf("refusal %q lacks %q", msg, want)
			}
		}
		if err := budget.RecordTurn(a.Root, "a1", time.Now()); err != nil {
			t.Fatal(err)
		}
		a.OK("send_message", map[string]any{"to": "bob", "text": "after the operator's prompt"})
	})
}
