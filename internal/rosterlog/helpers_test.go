package rosterlog

import (
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	natsstore "github.com/interlink-go/interlink/internal/store/nats"
	"github.com/interlink-go/interlink/internal/store/natstest"
	"github.com/interlink-go/interlink/internal/store/storetest"
)

// hintWait bounds how long a test waits for a watched record. Records
// normally take a millisecond; the bound covers a server restart, after
// which the client starts its consumer again with pauses of a second or
// more.
const hintWait = 30 * time.Second

// openStore opens a store on stream of srv and closes it at cleanup. The
// connection retries quickly, so tests that restart the server need not
// wait long.
func openStore(t *testing.T, srv *natstest.Server, stream string) *natsstore.Store {
	t.Helper()
	s, err := natsstore.Open(srv.URL(), &natsstore.Options{
		Stream:  stream,
		Connect: []nats.Option{nats.ReconnectWait(20 * time.Millisecond)},
	})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// jsClient connects to srv for a test that works on streams directly.
func jsClient(t *testing.T, srv *natstest.Server) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	nc, err := nats.Connect(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return nc, js
}

var enqueue = storetest.Enqueue

func itoa(i int) string { return strconv.Itoa(i) }
