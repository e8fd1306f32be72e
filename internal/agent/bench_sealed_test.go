package agent_test

import (
	"bytes"
	"context"
	"io"
	"math"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/interlink-go/interlink/internal/agent/agenttest"
	"github.com/interlink-go/interlink/internal/bus/bustest"
	"github.com/interlink-go/interlink/internal/sealcap"
	"github.com/interlink-go/interlink/internal/wire"
)

// sendCounter counts, on the bus, the /send bodies addressed to a route
// of one key, sealed and plain. Reading a body of a few kilobytes again
// costs a few microseconds, the same for both kinds, next to
// milliseconds per message. Only the route counts: a receipt that the
// key's agent sends names the key too, as its sender.
type sendCounter struct {
	key           string
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
				send, err := wire.DecodeSend(body)
				for _, c := range counters {
					switch {
					case err != nil || !strings.HasPrefix(send.To, c.key):
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
	toBob := &sendCounter{key: bob.Key()}
	toCarol := &sendCounter{key: carol.Key()}
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
		turnSide
		count *sendCounter
	}
	sides := []*side{
		{turnSide{name: "sealed", peer: "bob", session: "b1", sender: a, from: alice, id: bob}, toBob},
		{turnSide{name: "plain", peer: "carol", session: "c1", sender: a, from: alice, id: carol}, toCarol},
	}
	for _, s := range sides {
		s.startRecipient(b, url, nil)
	}
	runTurns(b, nil, &sides[0].turnSide, &sides[1].turnSide)

	for _, s := range sides {
		sealed, plain := s.count.sealed.Load(), s.count.plain.Load()
		wantSealed := s.name == "sealed"
		if (wantSealed && (plain != 0 || sealed < s.sent)) || (!wantSealed && (sealed != 0 || plain < s.sent)) {
			b.Fatalf("to %s: %d sent, %d went sealed and %d plain; want every one %s", s.peer, s.sent, sealed, plain, s.name)
		}
		s.reportLatency(b, true)
	}
	b.ReportMetric(float64(sides[0].sum)/float64(sides[1].sum), "sealed/plain-time")
	b.ReportMetric(float64(sides[1].sum)/float64(sides[0].sum), "sealed/plain-rate")
}
