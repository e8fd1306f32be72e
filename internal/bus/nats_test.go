package bus

import (
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/interlink-go/interlink/internal/rosterlog"
	natsstore "github.com/interlink-go/interlink/internal/store/nats"
	"github.com/interlink-go/interlink/internal/store/natstest"
)

// newNATSHarness returns a harness on a JetStream store of srv's stream,
// with the roster in the stream's bucket, as interlink-bus --nats runs.
func newNATSHarness(t *testing.T, srv *natstest.Server, stream string) *harness {
	t.Helper()
	st, err := natsstore.Open(srv.URL(), &natsstore.Options{
		Stream:  stream,
		Connect: []nats.Option{nats.ReconnectWait(20 * time.Millisecond)},
	})
	if err != nil {
		t.Fatal(err)
	}
	rl, err := rosterlog.Open(st, nil)
	if err != nil {
		st.Close()
		t.Fatal(err)
	}
	h := &harness{tb: t, st: st, clock: newFakeClock(), logs: &logRecorder{}}
	h.srv = New(st, &Options{Logger: slog.New(h.logs), Now: h.clock.Now, RosterLog: rl})
	t.Cleanup(func() { st.Close() })
	return h
}

// The roster's golden exchanges answer byte for byte the same with the
// roster in a JetStream bucket (the queues in the fake store, whose keys
// the fixtures name).
func TestNATSRosterAnswersTheGoldenExchanges(t *testing.T) {
	t.Parallel()
	srv := natstest.Start(t, nil)
	st, err := natsstore.Open(srv.URL(), &natsstore.Options{Stream: "GOLDEN"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	rl, err := rosterlog.Open(st, nil)
	if err != nil {
		t.Fatal(err)
	}
	fake := newFakeStore(0)
	h := &harness{tb: t, st: fake, clock: newFakeClock(), logs: &logRecorder{}}
	h.srv = New(fake, &Options{Logger: slog.New(h.logs), Now: h.clock.Now, RosterLog: rl})
	t.Cleanup(h.srv.Shutdown)
	replayGolden(t, filepath.Join("testdata", "golden", "roster.txtar"), h)
}

// Two buses on one stream serve the same queues and the same roster:
// what one stores the other delivers and acknowledges in order, a poll
// parked on one wakes for a send through the other, and both list every
// announcement alike.
func TestBusesOnOneStreamShareQueuesWakesAndRoster(t *testing.T) {
	t.Parallel()
	srv := natstest.Start(t, nil)
	a, b := newNATSHarness(t, srv, "SHARE"), newNATSHarness(t, srv, "SHARE")
	baseB := b.listen()

	for i := range 20 {
		a.send("K#s", fmt.Sprint(i))
	}
	for i := range 20 {
		r := b.poll("K#s", 0)
		if r.Status != "message" || string(r.Envelope.Payload) != fmt.Sprint(i) {
			t.Fatalf("message %d through b: %+v", i, r)
		}
		if code := b.ack("K#s", r.Ack); code != http.StatusOK {
			t.Fatalf("ack %d through b: %d", i, code)
		}
	}
	if r := a.poll("K#s", 0); r.Status != "timeout" {
		t.Fatalf("queue after b acknowledged everything, seen through a: %+v", r)
	}

	woken := parkPoll(t, b, baseB, "K#w")
	a.send("K#w", `"wake"`)
	if r := reply(t, woken); r.Status != "message" || string(r.Envelope.Payload) != `"wake"` {
		t.Fatalf("poll parked on b answered %+v", r)
	}

	a.announce(`{"pubkey":"k1","name":"through a"}`)
	b.announce(`{"pubkey":"k2","name":"through b"}`)
	a.announce(`{"pubkey":"k3"}`)
	if rec := b.do(http.MethodPost, "/unregister", `{"pubkey":"k3"}`); rec.Code != http.StatusAccepted {
		t.Fatalf("unregister through b: %d", rec.Code)
	}
	want := `{"roster":[{"age_ms":0,"name":"through a","pubkey":"k1"},{"age_ms":0,"name":"through b","pubkey":"k2"}]}`
	waitFor(t, 10*time.Second, "both buses to list the same roster", func() bool {
		return a.rosterBody() == want && b.rosterBody() == want
	})
}

// While the NATS server is away the bus says it is unhealthy; it recovers
// by itself when the server is back, and a poll parked through the outage
// wakes for a message sent through another bus afterwards.
func TestBusRidesOutANATSRestart(t *testing.T) {
	t.Parallel()
	srv := natstest.Start(t, nil)
	a, b := newNATSHarness(t, srv, "OUTAGE"), newNATSHarness(t, srv, "OUTAGE")
	baseB := b.listen()
	health := func(h *harness) int { return h.do(http.MethodGet, "/healthz", "").Code }
	if health(a) != http.StatusOK || health(b) != http.StatusOK {
		t.Fatal("unhealthy before the outage")
	}
	parked := parkPoll(t, b, baseB, "K#p")

	srv.Shutdown()
	waitFor(t, 10*time.Second, "the buses to report the outage", func() bool {
		return health(a) == http.StatusServiceUnavailable && health(b) == http.StatusServiceUnavailable
	})
	if rec := b.do(http.MethodGet, "/healthz", ""); rec.Body.String() != `{"error":"store unavailable"}` {
		t.Errorf("/healthz during the outage: %s", rec.Body)
	}
	srv.Restart()
	waitFor(t, 30*time.Second, "the buses to recover", func() bool {
		return health(a) == http.StatusOK && health(b) == http.StatusOK
	})
	// JetStream may take a moment after the connection is back.
	waitFor(t, 30*time.Second, "a send through a to succeed", func() bool {
		return a.post("/send", `{"to":"K#p","payload":"after"}`) == http.StatusAccepted
	})
	if r := reply(t, parked); r.Status != "message" || string(r.Envelope.Payload) != `"after"` {
		t.Fatalf("poll parked through the outage answered %+v", r)
	}
}
