package main

// Tests of buses on NATS servers and streams with settings the bus did
// not choose: a stock server's max_payload, a smaller one still, and a
// stream an older bus made.

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/interlink-go/interlink/internal/bus"
	"github.com/interlink-go/interlink/internal/store"
	natsstore "github.com/interlink-go/interlink/internal/store/nats"
	"github.com/interlink-go/interlink/internal/store/natstest"
	"github.com/interlink-go/interlink/internal/wire"
)

// postBody posts body to /send as it is and returns the status, the
// Interlink-Max-Body header and the answer.
func postBody(t testing.TB, base, body string) (int, string, string) {
	t.Helper()
	resp, err := httpc.Post(base+"/send", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatalf("send: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get(wire.MaxBodyHeader), string(b)
}

// bodyOf returns a /send body of exactly n bytes to route.
func bodyOf(t testing.TB, route string, n int64) string {
	t.Helper()
	head := `{"to":"` + route + `","payload":"`
	return head + strings.Repeat("p", int(n)-len(head)-2) + `"}`
}

// A nats-server started without settings takes messages of up to 1 MiB.
// The bus starts on it all the same, says in one line what that limits,
// and serves: a body of exactly its limit is sent, received and
// acknowledged; one byte more gets 413 with a JSON error naming the
// limit. /metrics, /healthz and every answer tell the limit.
func TestBusServesOnAStockNATSServer(t *testing.T) {
	t.Parallel()
	srv := natstest.Start(t, &natstest.Options{MaxPayload: natstest.StockMaxPayload})
	p := natsBus(t, srv, "STOCK")
	defer p.stop(t)
	limit := bus.BodyLimit(natstest.StockMaxPayload - (natsstore.MinPayload(0)))
	want := strconv.FormatInt(limit, 10)

	warn := logLines(p.logs.String(), "the NATS server's max_payload limits message bodies; a larger /send gets 413")
	if len(warn) != 1 || !strings.Contains(warn[0], "max_body="+want+" max_payload=1048576") ||
		!strings.Contains(warn[0], "set max_payload to 2097344 or more") {
		t.Errorf("want one warning naming the limit and the max_payload for 2 MiB, got %q:\n%s", warn, p.logs)
	}
	if l := logLines(p.logs.String(), "bus listening"); len(l) != 1 || !strings.HasSuffix(l[0], "max_body="+want) {
		t.Errorf("the listening line does not give max_body=%s: %q", want, l)
	}

	code, header, answer := postBody(t, p.base, bodyOf(t, "K#stock", limit))
	if code != http.StatusAccepted || header != want {
		t.Fatalf("send of %d bytes: %d %q, %s %q", limit, code, answer, wire.MaxBodyHeader, header)
	}
	got := recv(t, p.base, "K#stock")
	if got.Status != "message" || len(got.Envelope.Payload) != int(limit)-len(`{"to":"K#stock","payload":}`) {
		t.Fatalf("recv: %s with a payload of %d bytes", got.Status, len(got.Envelope.Payload))
	}
	if code := post(t, p.base, "/ack", map[string]string{"me": "K#stock", "ack": got.Ack}); code != http.StatusOK {
		t.Fatalf("ack: %d", code)
	}
	if again := recv(t, p.base, "K#stock"); again.Status != "timeout" {
		t.Fatalf("after the ack: %+v", again)
	}

	code, _, answer = postBody(t, p.base, bodyOf(t, "K#stock", limit+1))
	var e struct{ Error string }
	if err := json.Unmarshal([]byte(answer), &e); err != nil || code != http.StatusRequestEntityTooLarge ||
		e.Error != "request body too large: more than "+want+" bytes, the most this bus's store takes" {
		t.Fatalf("send of one byte more: %d %s, want 413 naming %s", code, answer, want)
	}

	if got := metricInt(t, p.base, "interlink_bus_max_body_bytes"); got != limit {
		t.Errorf("interlink_bus_max_body_bytes = %d, want %d", got, limit)
	}
	resp, err := httpc.Get(p.base + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(b) != `{"status":"ok"}` || resp.Header.Get(wire.MaxBodyHeader) != want {
		t.Errorf("/healthz: %d %s, %s %q", resp.StatusCode, b, wire.MaxBodyHeader, resp.Header.Get(wire.MaxBodyHeader))
	}
}

// A max_payload smaller still: the bus starts as long as it can carry
// bodies of bus.MinBodyBytes, and otherwise refuses with an error that
// names the setting, what the server has and the least the bus needs.
func TestBusOnASmallMaxPayload(t *testing.T) {
	t.Parallel()
	minimum := natsstore.MinPayload(bus.MinEnvelopeBytes)
	t.Run("64KiB", func(t *testing.T) {
		t.Parallel()
		srv := natstest.Start(t, &natstest.Options{MaxPayload: 64 << 10})
		p := natsBus(t, srv, "SMALL")
		defer p.stop(t)
		limit := bus.BodyLimit(64<<10 - natsstore.MinPayload(0))
		if code, header, answer := postBody(t, p.base, bodyOf(t, "K#s", limit)); code != http.StatusAccepted || header != strconv.FormatInt(limit, 10) {
			t.Fatalf("send of %d bytes: %d %s, header %q", limit, code, answer, header)
		}
		if code, _, answer := postBody(t, p.base, bodyOf(t, "K#s", limit+1)); code != http.StatusRequestEntityTooLarge ||
			!strings.Contains(answer, strconv.FormatInt(limit, 10)) {
			t.Fatalf("send of one byte more: %d %s", code, answer)
		}
	})
	for _, payload := range []int64{minimum, minimum - 1} {
		t.Run(strconv.FormatInt(payload, 10), func(t *testing.T) {
			t.Parallel()
			srv := natstest.Start(t, &natstest.Options{MaxPayload: int32(payload)})
			if payload == minimum {
				p := natsBus(t, srv, "EDGE")
				if code, _, answer := postBody(t, p.base, bodyOf(t, "K#s", bus.MinBodyBytes)); code != http.StatusAccepted {
					t.Fatalf("send of %d bytes: %d %s", bus.MinBodyBytes, code, answer)
				}
				p.stop(t)
				return
			}
			p := launch(t, busEnv(), "--addr", "127.0.0.1:0", "--nats", srv.URL(), "--nats-stream", "TINY")
			if code := p.wait(t, 20*time.Second); code != exitError {
				t.Fatalf("status %d, want %d", code, exitError)
			}
			logs := p.logs.String()
			want := "interlink-bus: cannot open the queues in NATS: value above the NATS server's max_payload: the server's max_payload is " +
				strconv.FormatInt(payload, 10) + " bytes"
			if !strings.Contains(logs, want) || !strings.Contains(logs, "set max_payload to "+strconv.FormatInt(minimum, 10)+" or more") {
				t.Errorf("want an error naming max_payload %d and the minimum %d:\n%s", payload, minimum, logs)
			}
			if !strings.Contains(logs, "interlink-bus: hint: the bus needs message bodies of at least 32768 bytes; set max_payload: 4MB") {
				t.Errorf("no hint:\n%s", logs)
			}
		})
	}
}

// A stream an older bus made (discard old, no max_bytes) is brought up to
// date when a bus starts on it, and the messages it held are delivered.
func TestBusUpdatesTheStreamOfAnOlderBus(t *testing.T) {
	t.Parallel()
	srv := natstest.Start(t, nil)
	nc, err := nats.Connect(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{
		Name:              "OLDBUS",
		Description:       "interlink bus queues, one subject per route",
		Subjects:          []string{natsstore.Subjects("OLDBUS")},
		MaxConsumers:      -1,
		MaxMsgs:           -1,
		MaxBytes:          -1,
		MaxMsgsPerSubject: 1024,
		MaxMsgSize:        -1,
		Discard:           jetstream.DiscardOld,
		Storage:           jetstream.FileStorage,
		Replicas:          1,
	}); err != nil {
		t.Fatal(err)
	}
	for _, payload := range []string{`"one"`, `"two"`} {
		if _, err := js.Publish(ctx, natsstore.Subject("OLDBUS", "K#old"), []byte(`{"payload":`+payload+`,"ts":1}`)); err != nil {
			t.Fatal(err)
		}
	}

	p := natsBus(t, srv, "OLDBUS")
	defer p.stop(t)
	if l := logLines(p.logs.String(), "stream brought up to date"); len(l) != 1 ||
		!strings.Contains(l[0], `changed="discard DiscardOld -> DiscardNew, max_bytes unlimited -> 134217728, allow_direct false -> true"`) {
		t.Errorf("want one line saying what changed, got %q:\n%s", l, p.logs)
	}
	if got := drain(t, p.base, "K#old"); strings.Join(got, " ") != `"one" "two"` {
		t.Errorf("drained %v", got)
	}
	s, err := js.Stream(ctx, "OLDBUS")
	if err != nil {
		t.Fatal(err)
	}
	if c := s.CachedInfo().Config; c.Discard != jetstream.DiscardNew || c.MaxBytes != store.DefaultTotalBytes {
		t.Errorf("stream after the bus started: discard %v, max_bytes %d", c.Discard, c.MaxBytes)
	}
}
