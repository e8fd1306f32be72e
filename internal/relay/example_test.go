package relay_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http/httptest"
	"time"

	"github.com/interlink-go/interlink/internal/bus"
	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/relay"
	"github.com/interlink-go/interlink/internal/store"
)

// A message goes to a route on a relay, comes back from a long-poll, and is
// acknowledged once it has been handled.
func Example() {
	srv := bus.New(store.NewMemory(nil), nil)
	ts := httptest.NewServer(srv)
	defer ts.Close()
	defer srv.Shutdown()

	urls, err := relay.ParseURLs([]string{ts.URL + "/, " + ts.URL})
	if err != nil {
		panic(err)
	}
	c := relay.New(urls[0], nil)
	ctx := context.Background()
	if err := c.Send(ctx, "KEY#s1", []byte(`{"text":"hi"}`)); err != nil {
		panic(err)
	}
	d, err := c.Recv(ctx, "KEY#s1", 25*time.Second)
	if err != nil {
		panic(err)
	}
	fmt.Println(len(urls), d.HasMessage, string(d.Payload))
	if err := c.Ack(ctx, "KEY#s1", d.Ack); err != nil {
		panic(err)
	}
	// Output:
	// 1 true {"text":"hi"}
}

// FetchRoster keeps only announcements whose signatures verify, and Groups
// gathers them by identity.
func ExampleFetchRoster() {
	srv := bus.New(store.NewMemory(nil), nil)
	ts := httptest.NewServer(srv)
	defer ts.Close()
	defer srv.Shutdown()

	s, err := identity.NewSigner(bytes.Repeat([]byte{1}, 32))
	if err != nil {
		panic(err)
	}
	c := relay.New(ts.URL, nil)
	ctx := context.Background()
	for _, sid := range []string{"s1", "s2"} {
		a := s.Announce("laptop", identity.SessionInfo{SessionID: sid}, identity.Millis(time.Now()))
		if err := c.Announce(ctx, a); err != nil {
			panic(err)
		}
	}
	forged := s.Announce("laptop", identity.SessionInfo{SessionID: "s3"}, 1)
	forged.Name = "someone else"
	if err := c.Announce(ctx, forged); err != nil {
		panic(err)
	}

	r := relay.FetchRoster(ctx, []*relay.Client{c})
	for _, g := range r.Groups() {
		fmt.Println(g.Name, len(g.Sessions), g.Sessions[0].Live)
	}
	fmt.Println("available:", r.Available)
	// Output:
	// laptop 2 true
	// available: 1
}
