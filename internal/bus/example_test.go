package bus_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/interlink-go/interlink/internal/bus"
	"github.com/interlink-go/interlink/internal/store"
)

// A message goes in through /send and comes out of /recv with the key that
// acknowledges it.
func Example() {
	st := store.NewMemory(nil)
	defer st.Close()
	srv := bus.New(st, nil)
	ts := httptest.NewServer(srv)
	defer ts.Close()
	defer srv.Shutdown()

	resp, err := http.Post(ts.URL+"/send", "application/json",
		strings.NewReader(`{"to":"K#s1","payload":{"text":"hi"}}`))
	if err != nil {
		panic(err)
	}
	resp.Body.Close()
	fmt.Println(resp.Status)

	resp, err = http.Get(ts.URL + "/recv?me=K%23s1&timeout_ms=1000")
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	var reply struct {
		Status   string
		Ack      string
		Envelope struct{ Payload json.RawMessage }
	}
	if err := json.NewDecoder(resp.Body).Decode(&reply); err != nil {
		panic(err)
	}
	fmt.Println(reply.Status, string(reply.Envelope.Payload), strings.HasPrefix(reply.Ack, "K#s1\x00"))
	// Output:
	// 202 Accepted
	// message {"text":"hi"} true
}

// Serve the bus by its connection rules, and wire Shutdown to the HTTP
// server, so parked long-polls end when it stops instead of holding it for
// up to two minutes.
func ExampleServer_Shutdown() {
	st := store.NewMemory(nil)
	opts := &bus.Options{}
	srv := bus.New(st, opts)
	hs := bus.NewHTTPServer(srv, opts)
	hs.RegisterOnShutdown(srv.Shutdown)
	ln, err := net.Listen("tcp", "127.0.0.1:9440")
	if err != nil {
		panic(err)
	}

	go hs.Serve(bus.Listen(ln, opts))
	// ... later, when the process is asked to stop:
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	hs.Shutdown(ctx) // ends parked polls through srv.Shutdown
	st.Close()       // the store is closed last, by its owner
}
