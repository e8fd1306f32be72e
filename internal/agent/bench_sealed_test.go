package agent_test

import (
	"bytes"
	"context"
	"io"
	"math"
	"net/http"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/interlink-go/interlink/internal/agent"
	"github.com/interlink-go/interlink/internal/agent/agenttest"
	"github.com/interlink-go/interlink/internal/bus/bustest"
	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/sealcap"
)

// sendCounter counts, on the bus, the /send bodies addressed to one key,
// sealed and plain. Reading a body of a few kilobytes again costs a few
// microseconds, the same for both kinds, next to milliseconds per message.
type sendCounter struct {
	key           []byte
	sealed, plain atomic.Int64
}

// countSends wraps a bus handler so that every /send to the key of one
// of counters is counted in it.
func countSends(counters ...*sendCounter) func(http.Handler) http.Handler {
	sealedMark := []byte(`"sealed":"`)
	return func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/send" {
				body, _ := io.ReadAll(r.Body)
				r.Body = io.NopCloser(bytes.NewReader(body))
				for _, c := range counters {
					switch {
					case !bytes.Contains(body, c.key):
					case bytes.Contains(body, sealedMark):
						c.sealed.Add(1)
					default:
						c.plain.Add(1)
					}
				}
			}
			h.ServeHTTP(w, r)
		})
	}
}

// BenchmarkSealedAndPlainToCommit measures what sealing adds to one
// message, from alice's send_message call to its commit in the
// recipient's mailbox (the path of BenchmarkSendToCommit), through a real
// in-memory bus on loopback. Alice sends in turn to two recipients, both
// current agents that announce sealing: bob, whom she learns from the
// roster to seal to, and carol, whom her capabilities file holds as not
// sealing by a statement signed later than any announcement of the run.
// Both see the same machine, so a change of its load falls on both. The
// sealed path adds the seal in alice's outbox (ephemeral X25519, HKDF,
// ChaCha20-Poly1305 over the padded message, the envelope signature), a
// larger body, and the opening in the receiver (two signature checks, the
// X25519 and the decryption) before the gate. Every /send is counted on
// the bus, and the run fails unless every message to bob went sealed and
// every message to carol plain.
//
// It reports the median and 99th percentile of each, sealed/plain-time,
// the ratio of their mean times, and sealed/plain-rate, its inverse: the
// rate of sealed messages as a fraction of the rate of plain ones.
func BenchmarkSealedAndPlainToCommit(b *testing.B) {
	alice, bob, carol := agenttest.NewIdent(b), agenttest.NewIdent(b), agenttest.NewIdent(b)
	alice.Admit(b, "bob", bob, "carol", carol)
	bob.Admit(b, "alice", alice)
	carol.Admit(b, "alice", alice)
	toBob := &sendCounter{key: []byte(bob.Key())}
	toCarol := &sendCounter{key: []byte(carol.Key())}
	url := bustest.Start(b, &bustest.Options{Wrap: countSends(toBob, toCarol)})

	aliceRoot := b.TempDir()
	caps, err := sealcap.Open(aliceRoot, alice.Signer.Public(), nil)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := caps.Learn(context.Background(), carol.Signer.Public(), math.MaxUint64, false); err != nil {
		b.Fatal(err)
	}
	a := agenttest.Start(b, alice, "a1", []string{url}, &agenttest.Options{Root: aliceRoot, NoSink: true})

	type side struct {
		name, peer, session string
		id                  *agenttest.Ident
		count               *sendCounter
		root                string
		got                 chan string
		sent                int64
		lat                 []time.Duration
		sum                 time.Duration
	}
	sides := []*side{
		{name: "sealed", peer: "bob", session: "b1", id: bob, count: toBob},
		{name: "plain", peer: "carol", session: "c1", id: carol, count: toCarol},
	}
	for _, s := range sides {
		s.root, s.got = b.TempDir(), make(chan string, 1)
		agenttest.Start(b, s.id, s.session, []string{url}, &agenttest.Options{Root: s.root, NoSink: true, Edit: func(c *agent.Config) {
			c.Delivered = func(m *identity.Message, _ string) { s.got <- m.MsgID }
		}})
		agenttest.OnRoster(b, url, s.id.Key(), s.session)
	}
	send := func(s *side) time.Duration {
		args := map[string]any{"to": s.peer, "session": s.session, "text": "benchmark message of a typical length, about one line of prose."}
		t0 := time.Now()
		id := agenttest.MsgID(b, a.OK("send_message", args))
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
	for _, s := range sides { // alice learns bob's capabilities from the roster
		send(s)
	}

	n := 0
	for b.Loop() {
		if n == 45 { // stay within 45 unread records of an empty mailbox
			b.StopTimer()
			for _, s := range sides {
				writeAcknowledged(b, s.root, alice, s.id, s.session, 0)
			}
			n = 0
			b.StartTimer()
		}
		n++
		order := sides
		if n%2 == 0 {
			order = []*side{sides[1], sides[0]}
		}
		for _, s := range order {
			d := send(s)
			s.lat = append(s.lat, d)
			s.sum += d
		}
	}

	b.StopTimer()
	for _, s := range sides {
		sealed, plain := s.count.sealed.Load(), s.count.plain.Load()
		wantSealed := s.name == "sealed"
		if (wantSealed && (plain != 0 || sealed < s.sent)) || (!wantSealed && (sealed != 0 || plain < s.sent)) {
			b.Fatalf("to %s: %d sent, %d went sealed and %d plain; want every one %s", s.peer, s.sent, sealed, plain, s.name)
		}
		slices.Sort(s.lat)
		b.ReportMetric(float64(s.lat[len(s.lat)/2].Microseconds()), s.name+"-p50-µs")
		b.ReportMetric(float64(s.lat[len(s.lat)*99/100].Microseconds()), s.name+"-p99-µs")
	}
	b.ReportMetric(float64(sides[0].sum)/float64(sides[1].sum), "sealed/plain-time")
	b.ReportMetric(float64(sides[1].sum)/float64(sides[0].sum), "sealed/plain-rate")
}
