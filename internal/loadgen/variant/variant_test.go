package variant

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

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
