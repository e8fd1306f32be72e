package agent_test

import (
	"slices"
	"testing"
	"time"

	"github.com/interlink-go/interlink/internal/agent"
	"github.com/interlink-go/interlink/internal/agent/agenttest"
	"github.com/interlink-go/interlink/internal/identity"
)

// turnSide is one path of a benchmark that times send_message to the
// commit in the recipient's mailbox on two paths in turns, so that a
// change of the machine's load falls on both: a sender, a recipient
// started by startRecipient, and what the loop measured.
type turnSide struct {
	name, peer, session string
	sender              *agenttest.Node
	from, id            *agenttest.Ident // the sender's and the recipient's identities
	root                string           // the recipient's state root
	got                 chan string      // the msg_id of each message the recipient commits
	sent                int64
	lat                 []time.Duration
	sum                 time.Duration
}

// startRecipient starts s's recipient on url, which tells s.got of every
// message it commits, with edit applied to its configuration when not
// nil, and waits until the roster lists it.
func (s *turnSide) startRecipient(b *testing.B, url string, edit func(*agent.Config)) {
	b.Helper()
	s.root, s.got = b.TempDir(), make(chan string, 1)
	agenttest.Start(b, s.id, s.session, []string{url}, &agenttest.Options{Root: s.root, NoSink: true, Edit: func(c *agent.Config) {
		c.Delivered = func(m *identity.Message, _ string) { s.got <- m.MsgID }
		if edit != nil {
			edit(c)
		}
	}})
	agenttest.OnRoster(b, url, s.id.Key(), s.session)
}

// send sends one message of a typical length to s's recipient and returns
// how long it took to its commit there.
func (s *turnSide) send(b *testing.B) time.Duration {
	b.Helper()
	args := map[string]any{"to": s.peer, "session": s.session, "text": "benchmark message of a typical length, about one line of prose."}
	t0 := time.Now()
	id := agenttest.MsgID(b, s.sender.OK("send_message", args))
	select {
	case m := <-s.got:
		if m != id {
			b.Fatalf("%s committed %s, sent %s", s.peer, m, id)
		}
	case <-time.After(10 * time.Second):
		b.Fatalf("message to %s not committed within 10 s", s.peer)
	}
	s.sent++
	return time.Since(t0)
}

// runTurns sends once on each side unmeasured (the senders learn their
// recipients' capabilities) and calls ready, if not nil; then, for each
// iteration of b.Loop, it sends once on
// each side, the order changing every iteration, and records each time.
// Every 45 iterations, with the timer stopped, it marks the recipients'
// records acknowledged, so that each mailbox stays within 45 unread
// records of an empty one.
func runTurns(b *testing.B, ready func(), sides ...*turnSide) {
	for _, s := range sides {
		s.send(b)
	}
	if ready != nil {
		ready()
	}
	n := 0
	for b.Loop() {
		if n == 45 {
			b.StopTimer()
			for _, s := range sides {
				writeAcknowledged(b, s.root, s.from, s.id, s.session, 0)
			}
			n = 0
			b.StartTimer()
		}
		n++
		order := sides
		if n%2 == 0 {
			order = slices.Clone(sides)
			slices.Reverse(order)
		}
		for _, s := range order {
			d := s.send(b)
			s.lat = append(s.lat, d)
			s.sum += d
		}
	}
	b.StopTimer()
}

// reportLatency reports the median of s's times, and the 99th percentile
// too when p99 is set.
func (s *turnSide) reportLatency(b *testing.B, p99 bool) {
	slices.Sort(s.lat)
	b.ReportMetric(float64(s.lat[len(s.lat)/2].Microseconds()), s.name+"-p50-µs")
	if p99 {
		b.ReportMetric(float64(s.lat[len(s.lat)*99/100].Microseconds()), s.name+"-p99-µs")
	}
}
