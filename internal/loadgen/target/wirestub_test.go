package target

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/interlink-go/interlink/internal/loadgen/busclient"
)

// The stub answers the load generator's cycle as the bus does: 202 on
// send, the message in the bus's reply form on recv, 200 on ack, and a
// timeout once the message is acknowledged.
func TestWireStubAnswersTheCycleInTheBusFormat(t *testing.T) {
	at := time.UnixMilli(1_700_000_000_123)
	srv := httptest.NewServer(WireStub(func() time.Time { return at }))
	defer srv.Close()
	c := busclient.New(srv.URL, true, 1)
	defer c.Close()
	ctx := t.Context()

	if err := c.Send(ctx, "bench-r-wf-0", []byte(`{"id":"x","n":[1,2]}`)); err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(srv.URL + "/recv?me=bench-r-wf-0&timeout_ms=1000")
	if err != nil {
		t.Fatal(err)
	}
	body := readAll(t, resp)
	want := `{"ack":"bench-r-wf-0\u000000000000000000000001","envelope":{"payload":{"id":"x","n":[1,2]},"ts":1700000000123},"status":"message"}`
	if body != want || resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("recv: %d %q %s, want 200 application/json %s", resp.StatusCode, resp.Header.Get("Content-Type"), body, want)
	}
	m, err := c.Recv(ctx, "bench-r-wf-0", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Ack(ctx, "bench-r-wf-0", m.Ack); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Recv(ctx, "bench-r-wf-0", time.Second); err != busclient.ErrTimeout {
		t.Errorf("recv after the ack: %v, want %v", err, busclient.ErrTimeout)
	}
}

// The stub refuses what the bus refuses, by the same decoders, and takes
// what the bus takes in any form, not only the form the load generator
// writes.
func TestWireStubRefusesWhatTheBusRefuses(t *testing.T) {
	srv := httptest.NewServer(WireStub(time.Now))
	defer srv.Close()
	for _, tc := range []struct {
		path, body string
		want       int
	}{
		{"/send", `{"payload":1,"to":"r"}`, http.StatusAccepted},
		{"/send", `{"to":"a\"b","payload":1}`, http.StatusAccepted},
		{"/send", `{"to":"r"}`, http.StatusBadRequest},
		{"/send", `{"to":"a\u0000b","payload":1}`, http.StatusBadRequest},
		{"/send", `{"to":"r","payload":1`, http.StatusBadRequest},
		{"/ack", `{"ack":"k","me":"r"}`, http.StatusOK},
		{"/ack", `{"me":"r"}`, http.StatusBadRequest},
		{"/roster", ``, http.StatusNotFound},
	} {
		resp, err := http.Post(srv.URL+tc.path, "application/json", strings.NewReader(tc.body))
		if err != nil {
			t.Fatal(err)
		}
		readAll(t, resp)
		if resp.StatusCode != tc.want {
			t.Errorf("POST %s %s: %d, want %d", tc.path, tc.body, resp.StatusCode, tc.want)
		}
	}
	// A route with a control character, and one with a quote, which
	// comes back escaped.
	resp, err := http.Get(srv.URL + "/recv?me=a%00b&timeout_ms=0")
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, resp)
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("GET /recv for a route with a NUL: %d, want 400", resp.StatusCode)
	}
	resp, err = http.Get(srv.URL + "/recv?me=a%22b&timeout_ms=0")
	if err != nil {
		t.Fatal(err)
	}
	want := `{"ack":"a\"b\u000000000000000000000001","envelope":{"payload":1,"ts":`
	if body := readAll(t, resp); !strings.HasPrefix(body, want) || resp.StatusCode != http.StatusOK {
		t.Errorf("GET /recv for a route with a quote: %d %s, want 200 %s…", resp.StatusCode, body, want)
	}
}

// readAll reads and closes resp's body.
func readAll(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
