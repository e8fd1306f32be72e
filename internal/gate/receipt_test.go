package gate

import (
	"testing"
	"time"

	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/protocol"
)

// A receipt from a peer or the own key is admitted as a Receipt, never a
// Deliver; from a stranger, stale or replayed it is refused like a
// message.
func TestReceiptsPassTheChecksOfAMessageAndAreNeverDelivered(t *testing.T) {
	f := newFixture(t, 0)
	receipt := func(m *identity.Message) { m.Kind = identity.KindReceipt }
	d, err := f.decide(f.msg(t, f.alice, "r1", receipt))
	if err != nil || d.Outcome != Receipt || d.Petname != "alice" {
		t.Fatalf("from a peer: %v %q, %v", d.Outcome, d.Petname, err)
	}
	d, err = f.decide(f.msg(t, f.me, "r2", receipt))
	if err != nil || d.Outcome != Receipt || d.Petname != protocol.SelfSender {
		t.Fatalf("from the own key: %v %q, %v", d.Outcome, d.Petname, err)
	}
	_, err = f.decide(f.msg(t, f.eve, "r3", receipt))
	wantErr(t, err, ErrNotAllowlisted)
	_, err = f.decide(f.msg(t, f.alice, "r1", receipt))
	wantErr(t, err, ErrReplay)
	_, err = f.decide(f.msg(t, f.alice, "r4", func(m *identity.Message) {
		receipt(m)
		m.TS = identity.Millis(f.now.Add(-protocol.MaxPast - time.Second))
	}))
	wantErr(t, err, ErrStale)
	// A receipt's signature relabelled as a message does not verify.
	m := f.msg(t, f.alice, "r5", receipt)
	m.Kind = identity.KindMessage
	_, err = f.decide(m)
	wantErr(t, err, ErrBadSignature)
}
