package agent_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/interlink-go/interlink/internal/agent/agenttest"
	"github.com/interlink-go/interlink/internal/bus"
	"github.com/interlink-go/interlink/internal/bus/bustest"
	"github.com/interlink-go/interlink/internal/keylimit"
	"github.com/interlink-go/interlink/internal/reqsign"
	"github.com/interlink-go/interlink/internal/sealcap"
)

// BenchmarkSignedSealedAndPlainToCommit measures, in one run, one
// message from send_message to its commit in the recipient's mailbox on
// two buses side by side: the plain path, a bus with --auth off (which
// ignores request signatures, as the bus did before they existed) and a
// plaintext message; and the protected path, a bus with --auth required,
// which verifies every request's signature and holds it to the key it
// acts for, and a message sealed to its recipient. Each path has a
// sender and a recipient of its own (alice1 to carol, alice2 to bob), and
// the sends alternate between the two, so a change in the machine's load
// falls on both. The agents sign every request on both buses, as they do
// on any bus; only the protected bus verifies them. Every /send is
// counted on its bus, and the run fails unless each message to bob went
// sealed and each to carol plain.
//
// The protected bus has per-key limits and a nonce memory far above the
// loop's rate (hundreds of messages a second from one key), so that the
// figures are of signing, verifying, sealing and opening, not of waiting
// for tokens.
//
// It reports the median and 99th percentile of each path and
// protected/plain-rate, the rate of protected messages as a fraction of
// the rate of plain ones (the ratio of the mean times, inverted).
func BenchmarkSignedSealedAndPlainToCommit(b *testing.B) {
	alice1, alice2 := agenttest.NewIdent(b), agenttest.NewIdent(b)
	bob, carol := agenttest.NewIdent(b), agenttest.NewIdent(b)
	alice1.Admit(b, "carol", carol)
	alice2.Admit(b, "bob", bob)
	carol.Admit(b, "alice", alice1)
	bob.Admit(b, "alice", alice2)
	toBob := &sendCounter{key: bob.Key()}
	toCarol := &sendCounter{key: carol.Key()}

	fast := keylimit.Rate{Every: time.Nanosecond, Burst: 1 << 30}
	verifier, err := reqsign.New(&reqsign.Options{PerKey: 1 << 20, Total: 1 << 21})
	if err != nil {
		b.Fatal(err)
	}
	plainURL := bustest.Start(b, &bustest.Options{Auth: bus.AuthOff, Wrap: countSends(toCarol)})
	signedURL := bustest.Start(b, &bustest.Options{Auth: bus.AuthRequired, Verifier: verifier,
		Limits: &bus.Limits{Sends: fast, RosterUpdates: fast, Unsigned: fast}, Wrap: countSends(toBob)})

	// alice1 holds carol as not sealing, by a statement signed later than
	// any announcement of the run.
	alice1Root := b.TempDir()
	caps, err := sealcap.Open(alice1Root, alice1.Signer.Public(), nil)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := caps.Learn(context.Background(), carol.Signer.Public(), math.MaxUint64, false); err != nil {
		b.Fatal(err)
	}

	type side struct {
		turnSide
		url, fromRoot string
		count         *sendCounter
	}
	sides := []*side{
		{turnSide{name: "protected", peer: "bob", session: "b1", from: alice2, id: bob}, signedURL, b.TempDir(), toBob},
		{turnSide{name: "plain", peer: "carol", session: "c1", from: alice1, id: carol}, plainURL, alice1Root, toCarol},
	}
	for _, s := range sides {
		s.startRecipient(b, s.url, nil)
		s.sender = agenttest.Start(b, s.from, "a1", []string{s.url}, &agenttest.Options{Root: s.fromRoot, NoSink: true})
	}
	runTurns(b, nil, &sides[0].turnSide, &sides[1].turnSide)

	for _, s := range sides {
		sealed, plain := s.count.sealed.Load(), s.count.plain.Load()
		wantSealed := s.name == "protected"
		if (wantSealed && (plain != 0 || sealed < s.sent)) || (!wantSealed && (sealed != 0 || plain < s.sent)) {
			b.Fatalf("to %s: %d sent, %d went sealed and %d plain; want every one sealed only on the protected path", s.peer, s.sent, sealed, plain)
		}
		s.reportLatency(b, true)
	}
	b.ReportMetric(float64(sides[1].sum)/float64(sides[0].sum), "protected/plain-rate")
}
