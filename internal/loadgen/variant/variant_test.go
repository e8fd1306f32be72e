package variant

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/loadgen/busclient"
	"github.com/interlink-go/interlink/internal/loadgen/target"
)

// start starts v's bus and returns a client of it, trusting its
// certificate when it has one.
func start(t *testing.T, v Variant) *busclient.Client {
	t.Helper()
	opts, pair, err := v.Bus(target.Options{Store: target.StoreMemory})
	if err != nil {
		t.Fatal(err)
	}
	tg, err := target.Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tg.Stop(context.Background()) })
	c := busclient.New(tg.URL, true, 2)
	if pair != nil {
		c.Trust(pair.Client)
	}
	t.Cleanup(c.Close)
	return c
}

// cycle sends payload through l, polls it back, opens it and acks it.
func cycle(ctx context.Context, l *Lane, name string, payload []byte) ([]byte, error) {
	rt := l.Route(name)
	p, err := l.Seal(payload)
	if err != nil {
		return nil, err
	}
	if err := l.Send.Send(ctx, rt, p); err != nil {
		return nil, err
	}
	m, err := l.Recv.Recv(ctx, rt, time.Second)
	if err != nil {
		return nil, err
	}
	got, err := l.Open(m.Payload)
	if err != nil {
		return nil, err
	}
	return got, l.Recv.Ack(ctx, rt, m.Ack)
}

func TestSignedVariantBusRefusesUnsignedRequests(t *testing.T) {
	ctx := context.Background()
	v := Variant{Signed: true}
	c := start(t, v)
	lanes, err := v.Lanes(c, 1)
	if err != nil {
		t.Fatal(err)
	}
	l := &lanes[0]
	got, err := cycle(ctx, l, "s", []byte(`"hello"`))
	if err != nil || string(got) != `"hello"` {
		t.Fatalf("signed cycle: %q, %v", got, err)
	}
	// The same requests unsigned, or a poll signed by the sender rather
	// than the route's key, are refused.
	p, err := l.Seal([]byte(`"again"`))
	if err != nil {
		t.Fatal(err)
	}
	var se *busclient.StatusError
	if err := c.Send(ctx, l.Route("s"), p); !errors.As(err, &se) || se.Code != 401 {
		t.Errorf("unsigned send: %v, want status 401", err)
	}
	if err := l.Send.Send(ctx, l.Route("s"), p); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Recv(ctx, l.Route("s"), 0); err == nil {
		t.Error("an unsigned poll of the receiver's route was served")
	}
	if _, err := l.Send.Recv(ctx, l.Route("s"), 0); err == nil {
		t.Error("a poll signed by the sender, not the route's key, was served")
	}
}

func TestSealedLaneCarriesNoPlaintext(t *testing.T) {
	v := Variant{Sealed: true}
	c := busclient.New("http://127.0.0.1:1", false, 1)
	lanes, err := v.Lanes(c, 2)
	if err != nil {
		t.Fatal(err)
	}
	secret := []byte(`"s0-1.123.a secret that the relay must not see"`)
	p, err := lanes[0].Seal(secret)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(p, []byte("secret")) || !bytes.Contains(p, []byte(`"sealed":"`)) {
		t.Fatalf("sealed payload shows its text or is no envelope: %s", p)
	}
	got, err := lanes[0].Open(p)
	if err != nil || !bytes.Equal(got, secret) {
		t.Fatalf("open: %q, %v", got, err)
	}
	if _, err := lanes[1].Open(p); err == nil {
		t.Error("another lane's receiver opened the envelope")
	}
	p[len(p)/2] ^= 1
	if _, err := lanes[0].Open(p); err == nil {
		t.Error("a tampered envelope opened")
	}
}

func TestTLSVariantServesHTTPSToItsTrustingClientOnly(t *testing.T) {
	ctx := context.Background()
	v := Variant{TLS: true}
	c := start(t, v)
	lanes, err := v.Lanes(c, 1)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := cycle(ctx, &lanes[0], "t", []byte(`"over tls"`)); err != nil || string(got) != `"over tls"` {
		t.Fatalf("cycle over TLS: %q, %v", got, err)
	}
	// A client that does not trust the run's certificate fails.
	opts, _, err := v.Bus(target.Options{Store: target.StoreMemory})
	if err != nil {
		t.Fatal(err)
	}
	tg, err := target.Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Stop(ctx)
	plain := busclient.New(tg.URL, true, 1)
	defer plain.Close()
	if err := plain.Send(ctx, "t", []byte(`"x"`)); err == nil {
		t.Error("a client without the run's certificate was served")
	}
	// Nor does one that trusts the certificate of another run.
	other, err := SelfSigned()
	if err != nil {
		t.Fatal(err)
	}
	stranger := busclient.New(tg.URL, true, 1)
	defer stranger.Close()
	stranger.Trust(other.Client)
	if err := stranger.Send(ctx, "t", []byte(`"x"`)); err == nil {
		t.Error("a client trusting another run's certificate was served")
	}
}

func TestListNamesEachVariantAndTheirCombination(t *testing.T) {
	for _, tt := range []struct {
		tls, signed, sealed bool
		want                string
	}{
		{false, false, false, ""},
		{true, false, false, "tls"},
		{false, true, true, "signed sealed signed+sealed"},
		{true, true, true, "tls signed sealed tls+signed+sealed"},
	} {
		var got []string
		for _, v := range List(tt.tls, tt.signed, tt.sealed) {
			got = append(got, v.Name())
		}
		if s := strings.Join(got, " "); s != tt.want {
			t.Errorf("List(%t, %t, %t) = %q, want %q", tt.tls, tt.signed, tt.sealed, s, tt.want)
		}
	}
}

func TestPlainLaneLeavesRouteAndPayloadAsTheyAre(t *testing.T) {
	c := busclient.New("http://127.0.0.1:1", false, 1)
	for name, lanes := range map[string][]Lane{"Plain": Plain(c, 2), "the zero Variant's": mustLanes(t, Variant{}, c, 2)} {
		for i := range lanes {
			l := &lanes[i]
			if l.Send != c || l.Recv != c {
				t.Errorf("%s lane %d does not use the client it was given", name, i)
			}
			if got := l.Route("rt-3"); got != "rt-3" {
				t.Errorf("%s lane %d: route %q, want rt-3", name, i, got)
			}
			p := []byte(`"s0-1.5.payload"`)
			if got, err := l.Seal(p); err != nil || !bytes.Equal(got, p) {
				t.Errorf("%s lane %d: sent %q, %v; want the payload itself", name, i, got, err)
			}
			if got, err := l.Open(p); err != nil || !bytes.Equal(got, p) {
				t.Errorf("%s lane %d: opened %q, %v; want the body itself", name, i, got, err)
			}
		}
	}
}

func mustLanes(t *testing.T, v Variant, c *busclient.Client, n int) []Lane {
	t.Helper()
	lanes, err := v.Lanes(c, n)
	if err != nil {
		t.Fatal(err)
	}
	return lanes
}

// TestSignedLaneSendsTheSendersSignedMessage checks that a signed lane's
// payload is a plaintext message from the lane's sender to its receiver,
// carrying the payload as its text, and that a message whose text was
// changed after signing does not open.
func TestSignedLaneSendsTheSendersSignedMessage(t *testing.T) {
	c := busclient.New("http://127.0.0.1:1", false, 1)
	l := &mustLanes(t, Variant{Signed: true}, c, 1)[0]
	payload := []byte(`"s0-1.5.payload"`)
	p, err := l.Seal(payload)
	if err != nil {
		t.Fatal(err)
	}
	m, err := identity.DecodeMessage(p)
	if err != nil {
		t.Fatal(err)
	}
	if m.From != l.from.Public().String() || m.To != l.to.Public().String() || m.Text != string(payload) {
		t.Errorf("message from %s to %s with text %q; want from the sender %s to the receiver %s with the payload",
			m.From, m.To, m.Text, l.from.Public(), l.to.Public())
	}
	if _, err := m.Verify(); err != nil {
		t.Errorf("the message does not verify: %v", err)
	}
	if got, err := l.Open(p); err != nil || !bytes.Equal(got, payload) {
		t.Fatalf("open: %q, %v", got, err)
	}
	forged := bytes.Replace(p, []byte("payload"), []byte("PAYLOAD"), 1)
	if _, err := l.Open(forged); err == nil || !strings.Contains(err.Error(), "verifying") {
		t.Errorf("a message changed after signing opened: %v", err)
	}
	if _, err := l.Open([]byte(`"not a message"`)); err == nil {
		t.Error("a body that is no message opened")
	}
	// The route is a session of the receiver's key, which alone may poll
	// it on a bus that requires signatures.
	if rt := l.Route("rt-0"); !strings.HasPrefix(rt, l.to.Public().String()) || !strings.Contains(rt, "rt-0") {
		t.Errorf("route %q is not a session rt-0 of the receiver's key %s", rt, l.to.Public())
	}
	if l.Send == c || l.Recv == c || l.Send == l.Recv {
		t.Error("the signed lane's sends and polls do not go through clients of their own")
	}
}

// TestLanesHaveKeysOfTheirOwn checks that no two lanes of a variant, and
// no sender and receiver of one lane, share a key: each has routes and
// limits of its own on the bus.
func TestLanesHaveKeysOfTheirOwn(t *testing.T) {
	c := busclient.New("http://127.0.0.1:1", false, 1)
	for _, v := range []Variant{{Signed: true}, {Sealed: true}, {Signed: true, Sealed: true}} {
		seen := map[string]bool{}
		for i, l := range mustLanes(t, v, c, 4) {
			for _, k := range []string{l.from.Public().String(), l.to.Public().String()} {
				if seen[k] {
					t.Errorf("%s: lane %d repeats key %s", v.Name(), i, k)
				}
				seen[k] = true
			}
		}
		if len(seen) != 8 {
			t.Errorf("%s: %d keys for 4 lanes, want 8", v.Name(), len(seen))
		}
	}
}

// TestSignedSealedVariantRoundTripsOnItsBus runs cycles of every lane of
// the combined variant on its bus, over TLS, and checks each payload
// comes back as sent.
func TestSignedSealedVariantRoundTripsOnItsBus(t *testing.T) {
	ctx := context.Background()
	v := Variant{TLS: true, Signed: true, Sealed: true}
	c := start(t, v)
	lanes := mustLanes(t, v, c, 3)
	for i := range lanes {
		for j := range 2 {
			want := fmt.Sprintf(`"lane %d cycle %d"`, i, j)
			got, err := cycle(ctx, &lanes[i], "rt", []byte(want))
			if err != nil || string(got) != want {
				t.Fatalf("lane %d cycle %d: %q, %v", i, j, got, err)
			}
		}
	}
}
