package presence

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/relay"
	"github.com/interlink-go/interlink/internal/route"
	"github.com/interlink-go/interlink/internal/testutil"
)

func TestGoodbye(t *testing.T) {
	b := startBus(t)
	me, peer := testutil.Signer(t, 1), testutil.Signer(t, 2)
	dead := relay.New(closedURL(t), nil)
	a := New([]*relay.Client{dead, b.client}, me, "alpha", testInfo, nil)
	own := route.New(me.Public().String(), "s1")
	text := GoodbyeText("s1")

	n := a.Goodbye(t.Context(), map[identity.PublicKey]string{peer.Public(): "p1"}, own, text)
	if n != 1 {
		t.Fatalf("Goodbye = %d, want 1", n)
	}

	to := route.New(peer.Public().String(), "p1").String()
	d, err := b.client.Recv(t.Context(), to, time.Second)
	if err != nil || !d.HasMessage {
		t.Fatalf("Recv(%s) = %+v, %v; want the goodbye", to, d, err)
	}
	m, err := identity.DecodeMessage(d.Payload)
	if err != nil {
		t.Fatalf("DecodeMessage: %v", err)
	}
	from, err := m.Verify()
	if err != nil || from != me.Public() {
		t.Fatalf("Verify = %v, %v; want a valid signature by the own key", from, err)
	}
	if m.To != peer.Public().String() || m.Text != text || m.ReplyTo != own.String() ||
		m.Kind != identity.KindMessage || m.TaskID != "" || m.Status != "" || m.InReplyTo != "" || len(m.MsgID) != 32 {
		t.Errorf("goodbye = %+v, want a plain message to the peer replying to %s", m, own)
	}
}

func TestGoodbyeUnreachable(t *testing.T) {
	me := testutil.Signer(t, 1)
	a := New([]*relay.Client{relay.New(closedURL(t), nil)}, me, "alpha", testInfo, nil)
	sticky := map[identity.PublicKey]string{testutil.Signer(t, 2).Public(): "p1", testutil.Signer(t, 3).Public(): "p2"}
	done := make(chan int, 1)
	go func() {
		done <- a.Goodbye(t.Context(), sticky, route.New(me.Public().String(), "s1"), GoodbyeText("s1"))
	}()
	select {
	case n := <-done:
		if n != 0 {
			t.Errorf("Goodbye = %d, want 0 with no relay reachable", n)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Goodbye did not return")
	}
}

func TestGoodbyeBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for the goodbye bound")
	}
	// A relay that accepts the request and never answers: only the bound of
	// Goodbye ends the call, as the relay client would wait far longer.
	release := make(chan struct{})
	stall := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(stall.Close)
	t.Cleanup(func() { close(release) }) // runs first, so Close cannot hang
	me := testutil.Signer(t, 1)
	a := New([]*relay.Client{relay.New(stall.URL, nil)}, me, "alpha", testInfo, nil)
	done := make(chan int, 1)
	go func() {
		sticky := map[identity.PublicKey]string{testutil.Signer(t, 2).Public(): "p1"}
		done <- a.Goodbye(context.Background(), sticky, route.New(me.Public().String(), "s1"), "bye")
	}()
	select {
	case n := <-done:
		if n != 0 {
			t.Errorf("Goodbye = %d, want 0 from a relay that never answers", n)
		}
	case <-time.After(GoodbyeTimeout + 10*time.Second):
		t.Fatal("Goodbye did not return")
	}
}

func TestGoodbyeNone(t *testing.T) {
	b := startBus(t)
	a := New([]*relay.Client{b.client}, testutil.Signer(t, 1), "alpha", testInfo, nil)
	if n := a.Goodbye(t.Context(), nil, route.Route{}, "bye"); n != 0 {
		t.Errorf("Goodbye with no peers = %d, want 0", n)
	}
}

func TestGoodbyeText(t *testing.T) {
	got := GoodbyeText("a1b2c3d4")
	for _, want := range []string{"a1b2c3d4", "discover"} {
		if !strings.Contains(got, want) {
			t.Errorf("GoodbyeText = %q, want it to mention %q", got, want)
		}
	}
}

func ExampleGoodbyeText() {
	fmt.Println(GoodbyeText("a1b2c3d4"))
	// Output: Session a1b2c3d4 is shutting down and will not answer any more. If you were waiting for it, stop waiting and run discover to see which sessions are still live.
}
