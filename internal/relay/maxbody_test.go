package relay

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/interlink-go/interlink/internal/bus"
	"github.com/interlink-go/interlink/internal/store"
	"github.com/interlink-go/interlink/internal/wire"
)

// The client learns a relay's limit on /send bodies from any answer that
// gives it, refusals included, and ignores a header that is not a
// positive decimal number. A relay that never says leaves it unknown.
func TestClientLearnsTheRelaysMaxBody(t *testing.T) {
	var header atomic.Pointer[string]
	set := func(v string) { header.Store(&v) }
	set("")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if v := *header.Load(); v != "" {
			w.Header().Set("Interlink-Max-Body", v)
		}
		switch r.URL.Path {
		case "/send":
			w.WriteHeader(http.StatusRequestEntityTooLarge)
			_, _ = w.Write([]byte(`{"error":"request body too large: more than 1048448 bytes, the most this bus's store takes"}`))
		case "/roster":
			_, _ = w.Write([]byte(`{"roster":[]}`))
		default:
			_, _ = w.Write([]byte(`{"status":"ok"}`))
		}
	}))
	t.Cleanup(srv.Close)
	c := New(srv.URL, nil)

	if _, err := c.Roster(t.Context()); err != nil {
		t.Fatal(err)
	}
	if n, ok := c.MaxBody(); ok {
		t.Fatalf("MaxBody() = %d from a relay that never said", n)
	}
	set("1048448")
	err := c.Send(t.Context(), "K#s", []byte(`"`+strings.Repeat("x", 10)+`"`))
	if se, ok := errors.AsType[*StatusError](err); !ok || se.Code != http.StatusRequestEntityTooLarge || !se.Permanent() ||
		!strings.Contains(se.Error(), "more than 1048448 bytes") {
		t.Fatalf("send: %v, want a permanent 413 with the relay's reason", err)
	}
	if n, ok := c.MaxBody(); !ok || n != 1048448 {
		t.Fatalf("MaxBody() after a 413 = %d, %v", n, ok)
	}
	for _, bad := range []string{"-5", "0", "1e6", "12 34", "0x10", "99999999999999999999"} {
		set(bad)
		if _, err := c.Roster(t.Context()); err != nil {
			t.Fatal(err)
		}
		if n, _ := c.MaxBody(); n != 1048448 {
			t.Fatalf("header %q changed MaxBody() to %d", bad, n)
		}
	}
	set("65408")
	h, err := c.Health(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := c.MaxBody(); h.MaxBody != 65408 || n != 65408 {
		t.Fatalf("health MaxBody %d, client %d; want 65408", h.MaxBody, n)
	}
}

// Against interlink-bus, the limit is known after the first request.
func TestClientLearnsMaxBodyFromTheBus(t *testing.T) {
	srv := httptest.NewServer(bus.New(store.NewMemory(nil), nil))
	t.Cleanup(srv.Close)
	c := New(srv.URL, nil)
	if _, err := c.Roster(t.Context()); err != nil {
		t.Fatal(err)
	}
	if n, ok := c.MaxBody(); !ok || n != wire.MaxBodyBytes {
		t.Fatalf("MaxBody() = %d, %v; want %d", n, ok, wire.MaxBodyBytes)
	}
}
