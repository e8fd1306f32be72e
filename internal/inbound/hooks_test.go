package inbound_test

import (
	"testing"
	"time"

	"github.com/interlink-go/interlink/internal/gate"
	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/inbound"
	"github.com/interlink-go/interlink/internal/relay"
)

func TestHooks(t *testing.T) {
	f := newFixture(t)
	var delivered []string
	var dropped []string
	l := inbound.New(inbound.Config{
		Relay:   relay.New("http://127.0.0.1:1", nil),
		Route:   f.meRoute,
		Own:     f.me.Public(),
		Gate:    f.gate,
		Peers:   f.peers,
		Mailbox: f.mb,
		Pairing: f.pair,
		Sticky:  f.sticky,
		Delivered: func(d *gate.Decision) {
			delivered = append(delivered, d.Petname+":"+d.Message.MsgID)
		},
		Dropped: func(m *identity.Message, reason string) {
			dropped = append(dropped, reason+":"+m.MsgID)
		},
		RetryDelay: 10 * time.Millisecond,
	})
	ok := f.msg(t, f.alice, nil)
	handle(t, l, payload(t, ok), true)
	// The same message again: a replay, dropped by the gate.
	handle(t, l, payload(t, ok), true)
	stranger := f.msg(t, f.eve, nil)
	handle(t, l, payload(t, stranger), true)
	handle(t, l, []byte(`{"not":"a message"}`), true)

	if want := []string{"alice:" + ok.MsgID}; len(delivered) != 1 || delivered[0] != want[0] {
		t.Errorf("Delivered calls = %v, want %v", delivered, want)
	}
	want := []string{"replay:" + ok.MsgID, "not_allowlisted:" + stranger.MsgID, "undecodable:"}
	if len(dropped) != len(want) {
		t.Fatalf("Dropped calls = %v, want %v", dropped, want)
	}
	for i := range want {
		if dropped[i] != want[i] {
			t.Errorf("Dropped[%d] = %q, want %q", i, dropped[i], want[i])
		}
	}
}
