package relay

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/interlink-go/interlink/internal/bus"
	"github.com/interlink-go/interlink/internal/store"
)

func TestHealthReportsVersionAndRoundTrip(t *testing.T) {
	srv := httptest.NewServer(bus.New(store.NewMemory(nil), &bus.Options{Version: "v1.2.3\u202egnp"}))
	t.Cleanup(srv.Close)
	h, err := New(srv.URL, nil).Health(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if h.Version != "v1.2.3gnp" {
		t.Errorf("version %q, want the header without its bidi override", h.Version)
	}
	if h.RTT <= 0 || h.Received.Before(h.Sent) {
		t.Errorf("rtt %v, sent %v, received %v", h.RTT, h.Sent, h.Received)
	}
	off, ok := h.ClockOffset()
	if !ok || off < -2*time.Second || off > 2*time.Second {
		t.Errorf("offset to a bus on this machine = %v, %v; want within the Date header's second", off, ok)
	}
}

func TestHealthClockOffsetOfARelayAhead(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Date", time.Now().Add(90*time.Second).UTC().Format(http.TimeFormat))
		_, _ = w.Write([]byte(`{"status":"ok"}`))
	}))
	t.Cleanup(srv.Close)
	h, err := New(srv.URL, nil).Health(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if h.Version != "" {
		t.Errorf("version %q from a relay that sends none", h.Version)
	}
	off, ok := h.ClockOffset()
	if !ok || off < 89*time.Second || off > 91*time.Second {
		t.Errorf("offset = %v, %v; want 90 s give or take the header's second", off, ok)
	}
}

func TestHealthOfAFailingRelay(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header()["Date"] = nil
		http.Error(w, `{"error":"down"}`, http.StatusServiceUnavailable)
	}))
	t.Cleanup(srv.Close)
	_, err := New(srv.URL, nil).Health(t.Context())
	if se, ok := errors.AsType[*StatusError](err); !ok || se.Code != http.StatusServiceUnavailable {
		t.Fatalf("err = %v, want a 503 StatusError", err)
	}
	srv.Close()
	if _, err := New(srv.URL, nil).Health(t.Context()); err == nil {
		t.Fatal("a closed relay answered")
	}
}
