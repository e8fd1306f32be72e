package inbound_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/interlink-go/interlink/internal/gate"
	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/inbound"
	"github.com/interlink-go/interlink/internal/relay"
)

// An admitted receipt goes to Config.Receipt and never to the mailbox;
// the drops it reports are logged and counted by reason; a failure keeps
// it on the relay and a retry hands it over again; without a handler it
// is dropped as unexpected. Stored hears of every committed message,
// copies included, and never of a receipt.
func TestReceiptsGoToTheirHandlerNeverToTheMailbox(t *testing.T) {
	f := newFixture(t)
	var dropped, stored []string
	var got []string
	fail := errors.New("heard file locked")
	failing := true
	cfg := func(withHandler bool) inbound.Config {
		c := inbound.Config{
			Relay: relay.New("http://relay.invalid", nil), Route: f.meRoute, Own: f.me.Public(),
			Gate: f.gate, Peers: f.peers, Mailbox: f.mb, Pairing: f.pair, Sticky: f.sticky, Knocks: f.knocks,
			Notify: f.notify, Logger: f.logger, RetryDelay: 10 * time.Millisecond,
			Dropped: func(m *identity.Message, reason string) { dropped = append(dropped, reason+":"+m.MsgID) },
			Stored:  func(d *gate.Decision) { stored = append(stored, d.Message.MsgID) },
		}
		if withHandler {
			c.Receipt = func(_ context.Context, d *gate.Decision) (map[string]int, error) {
				if failing {
					failing = false
					return nil, fail
				}
				got = append(got, d.Message.MsgID)
				return map[string]int{"receipt_unknown_msg": 2, "receipt_wrong_signer": 1}, nil
			}
		}
		return c
	}
	l := inbound.New(cfg(true))
	rc := f.msg(t, f.alice, func(m *identity.Message) { m.Kind = identity.KindReceipt })
	p := payload(t, rc)
	if ack, err := l.Handle(context.Background(), delivery(p)); ack || !errors.Is(err, fail) {
		t.Fatalf("failing handler: ack %v, err %v", ack, err)
	}
	handle(t, l, p, true) // handed over again, not refused as a replay
	if !slices.Equal(got, []string{rc.MsgID}) {
		t.Errorf("handler got %v", got)
	}
	want := []string{"receipt_unknown_msg:" + rc.MsgID, "receipt_wrong_signer:" + rc.MsgID}
	if !slices.Equal(dropped, want) {
		t.Errorf("dropped %v, want %v", dropped, want)
	}
	f.wantLog(t, "receipt entries dropped", "reason=receipt_unknown_msg", "count=2")

	msg := f.msg(t, f.alice, nil)
	handle(t, l, payload(t, msg), true)
	handle(t, l, payload(t, msg), true) // a copy the gate refuses as a replay
	if n := len(f.records(t)); n != 1 {
		t.Errorf("mailbox holds %d records, want the message only", n)
	}
	if !slices.Equal(stored, []string{msg.MsgID}) {
		t.Errorf("stored %v", stored)
	}

	dropped = nil
	off := inbound.New(cfg(false))
	rc2 := f.msg(t, f.alice, func(m *identity.Message) { m.Kind = identity.KindReceipt })
	handle(t, off, payload(t, rc2), true)
	if !slices.Equal(dropped, []string{"unexpected:" + rc2.MsgID}) {
		t.Errorf("without a handler: dropped %v", dropped)
	}
}
