package relay

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/interlink-go/interlink/internal/testutil"
)

func TestSendRecvAckRoundTrip(t *testing.T) {
	base, _ := startBus(t)
	c := New(base+"/", nil)
	ctx := t.Context()
	key := testutil.Signer(t, 1).Public().String()
	route := key + "#s1"
	payload := []byte(`{"from":"x","text":"hi <there> & \u0000 you","kind":"message"}`)

	if err := c.Send(ctx, route, payload); err != nil {
		t.Fatalf("Send: %v", err)
	}
	// The # must reach the bus encoded: the bare key's queue stays empty.
	if d, err := c.Recv(ctx, key, 0); err != nil || d.HasMessage {
		t.Fatalf("Recv(bare key) = %+v, %v; want no message", d, err)
	}
	d, err := c.Recv(ctx, route, 5*time.Second)
	if err != nil {
		t.Fatalf("Recv: %v", err)
	}
	if !d.HasMessage {
		t.Fatal("Recv: no message")
	}
	if !strings.HasPrefix(d.Ack, route+"\x00") || len(d.Ack) != len(route)+1+20 {
		t.Errorf("ack key = %q, want %q + NUL + 20 digits", d.Ack, route)
	}
	var got, want any
	if err := json.Unmarshal(d.Payload, &got); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(payload, &want); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("payload (-sent +received):\n%s", diff)
	}

	// Not acked yet: the same message comes again.
	again, err := c.Recv(ctx, route, 0)
	if err != nil || again.Ack != d.Ack {
		t.Fatalf("second Recv = %+v, %v; want the same ack", again, err)
	}
	if err := c.Ack(ctx, route, d.Ack); err != nil {
		t.Fatalf("Ack: %v", err)
	}
	if d, err := c.Recv(ctx, route, 0); err != nil || d.HasMessage {
		t.Fatalf("Recv after Ack = %+v, %v; want an empty queue", d, err)
	}
	// Acks are idempotent; a key of another route is refused.
	if err := c.Ack(ctx, route, d.Ack); err != nil {
		t.Errorf("second Ack: %v", err)
	}
	var se *StatusError
	if err := c.Ack(ctx, key+"#other", d.Ack); !errors.As(err, &se) || se.Code != http.StatusForbidden {
		t.Errorf("Ack with the wrong route = %v, want a 403 StatusError", err)
	}
}

func TestRecvTimeout(t *testing.T) {
	base, _ := startBus(t)
	d, err := New(base, nil).Recv(t.Context(), "K#idle", 20*time.Millisecond)
	if err != nil {
		t.Fatalf("Recv: %v", err)
	}
	if d.HasMessage || d.Ack != "" || d.Payload != nil {
		t.Errorf("Recv = %+v, want an empty Delivery", d)
	}
}

func TestRecvNullPayload(t *testing.T) {
	base, _ := startBus(t)
	c := New(base, nil)
	if err := c.Send(t.Context(), "K#n", []byte("null")); err != nil {
		t.Fatal(err)
	}
	d, err := c.Recv(t.Context(), "K#n", 0)
	if err != nil || !d.HasMessage || d.Payload != nil {
		t.Fatalf("Recv = %+v, %v; want a message with a nil payload", d, err)
	}
}

func TestRecvCancel(t *testing.T) {
	arrived := make(chan struct{}, 1)
	base, _ := startBusWith(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/recv" {
				arrived <- struct{}{}
			}
			h.ServeHTTP(w, r)
		})
	})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := New(base, nil).Recv(ctx, "K#parked", time.Minute)
		done <- err
	}()
	<-arrived
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Recv after cancel = %v, want context.Canceled", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Recv still parked after its context was cancelled")
	}
}

func TestStatusError(t *testing.T) {
	tests := []struct {
		name      string
		code      int
		body      string
		permanent bool
		wantBody  string
	}{
		{name: "400", code: 400, body: `{"error":"bad route"}`, permanent: true, wantBody: `{"error":"bad route"}`},
		{name: "413", code: 413, body: "too big", permanent: true, wantBody: "too big"},
		{name: "429", code: 429, permanent: false},
		{name: "500", code: 500, body: "\x1b[31mboom\n\u202eevil", permanent: false, wantBody: "[31mboomevil"},
		{name: "503", code: 503, body: strings.Repeat("x", 1000), permanent: false, wantBody: strings.Repeat("x", 256)},
		{name: "redirect not followed", code: 307, permanent: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := startFake(t, func(w http.ResponseWriter, r *http.Request) {
				if tt.code == 307 {
					http.Redirect(w, r, "/elsewhere", tt.code)
					return
				}
				reply(tt.code, tt.body)(w, r)
			})
			err := New(base, nil).Send(t.Context(), "K#s", []byte(`{}`))
			var se *StatusError
			if !errors.As(err, &se) {
				t.Fatalf("Send = %v, want a *StatusError", err)
			}
			if se.Code != tt.code || se.Op != "send" || se.URL != base+"/send" {
				t.Errorf("StatusError = %+v", se)
			}
			if se.Permanent() != tt.permanent {
				t.Errorf("Permanent() = %v, want %v", se.Permanent(), tt.permanent)
			}
			if tt.wantBody != "" && se.Body != tt.wantBody {
				t.Errorf("Body = %q, want %q", se.Body, tt.wantBody)
			}
			if strings.ContainsAny(err.Error(), "\n\x1b\u202e") {
				t.Errorf("error text %q holds control characters", err)
			}
		})
	}
}

func TestRecvReplies(t *testing.T) {
	const digits20 = "00000000000000000007"
	tests := []struct {
		name    string
		code    int
		body    string
		want    Delivery
		wantErr error
		status  int
	}{
		{name: "message", code: 200, body: `{"status":"message","ack":"K#s\u0000` + digits20 + `","envelope":{"payload":{"a":1},"ts":5}}`,
			want: Delivery{HasMessage: true, Ack: "K#s\x00" + digits20, Payload: json.RawMessage(`{"a":1}`)}},
		{name: "no envelope", code: 200, body: `{"status":"message","ack":"k"}`, want: Delivery{HasMessage: true, Ack: "k"}},
		{name: "timeout", code: 200, body: `{"status":"timeout"}`},
		{name: "unknown status", code: 200, body: `{"status":"later","ack":"k"}`},
		{name: "error status", code: 500, body: `{"status":"error","error":"disk"}`, status: 500},
		{name: "not JSON", code: 200, body: `<html>`, wantErr: ErrMalformed},
		{name: "wrong shape", code: 200, body: `{"status":7}`, wantErr: ErrMalformed},
		{name: "message without ack", code: 200, body: `{"status":"message","envelope":{"payload":1}}`, wantErr: ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var query string
			base := startFake(t, func(w http.ResponseWriter, r *http.Request) {
				query = r.URL.RawQuery
				reply(tt.code, tt.body)(w, r)
			})
			d, err := New(base, nil).Recv(t.Context(), "K#s 1", 1500*time.Millisecond)
			if query != "me=K%23s+1&timeout_ms=1500" {
				t.Errorf("query = %q", query)
			}
			var se *StatusError
			switch {
			case tt.status != 0:
				if !errors.As(err, &se) || se.Code != tt.status {
					t.Fatalf("Recv = %v, want a %d StatusError", err, tt.status)
				}
			case tt.wantErr != nil:
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("Recv = %v, want %v", err, tt.wantErr)
				}
			case err != nil:
				t.Fatalf("Recv: %v", err)
			}
			if diff := cmp.Diff(tt.want, d); diff != "" {
				t.Errorf("Delivery (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRequests checks what each method puts on the wire.
func TestRequests(t *testing.T) {
	type request struct {
		Method, Path, ContentType string
		Body                      any
	}
	var (
		mu   sync.Mutex
		seen []request
	)
	base := startFake(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var body any
		if len(b) > 0 {
			if err := json.Unmarshal(b, &body); err != nil {
				t.Errorf("%s body is not JSON: %q", r.URL.Path, b)
			}
		}
		mu.Lock()
		seen = append(seen, request{r.Method, r.URL.Path, r.Header.Get("Content-Type"), body})
		mu.Unlock()
		w.WriteHeader(http.StatusAccepted)
	})
	c := New(base+"/prefix", nil)
	ctx := t.Context()
	s := testutil.Signer(t, 2)
	a := s.Announce("node", session("s1"), 42)
	age := uint64(7)
	a.AgeMS = &age
	if err := c.Send(ctx, "K#s", []byte(`{"text":"x"}`)); err != nil {
		t.Fatal(err)
	}
	if err := c.Ack(ctx, "K#s", "K#s\x0000000000000000000000001"); err != nil {
		t.Fatal(err)
	}
	if err := c.Announce(ctx, a); err != nil {
		t.Fatal(err)
	}
	if err := c.Unregister(ctx, a.PubKey, a.Session); err != nil {
		t.Fatal(err)
	}
	if err := c.Send(ctx, "K#s", []byte(`{not json`)); err == nil {
		t.Error("Send of an invalid payload succeeded")
	}

	sess := map[string]any{"session_id": "s1", "cwd": "/src/s1", "git_root": "repo", "summary": "working on s1"}
	want := []request{
		{"POST", "/prefix/send", "application/json", map[string]any{"to": "K#s", "payload": map[string]any{"text": "x"}}},
		{"POST", "/prefix/ack", "application/json", map[string]any{"me": "K#s", "ack": "K#s\x0000000000000000000000001"}},
		{"POST", "/prefix/announce", "application/json", map[string]any{
			"pubkey": a.PubKey, "name": "node", "session": sess, "ts": 42.0, "sig": a.Sig}},
		{"POST", "/prefix/unregister", "application/json", map[string]any{"pubkey": a.PubKey, "session": sess}},
	}
	if diff := cmp.Diff(want, seen); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
}

// TestBodyLimit checks that a relay streaming an endless reply is cut off.
func TestBodyLimit(t *testing.T) {
	stream := func(prefix string, n int) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, prefix)
			chunk := []byte(strings.Repeat(" ", 64<<10))
			for written := 0; written < n; written += len(chunk) {
				if _, err := w.Write(chunk); err != nil {
					return // the client hung up
				}
			}
			_, _ = io.WriteString(w, "]}")
		}
	}
	t.Run("roster", func(t *testing.T) {
		base := startFake(t, stream(`{"roster":[`, rosterLimit+1<<20))
		if _, err := New(base, nil).Roster(t.Context()); !errors.Is(err, ErrTooLarge) {
			t.Errorf("Roster = %v, want ErrTooLarge", err)
		}
	})
	t.Run("recv", func(t *testing.T) {
		base := startFake(t, stream(`{"status":"message","ack":"k","envelope":{"payload":[`, recvLimit+1<<20))
		if _, err := New(base, nil).Recv(t.Context(), "K", 0); !errors.Is(err, ErrTooLarge) {
			t.Errorf("Recv = %v, want ErrTooLarge", err)
		}
	})
	t.Run("under the limit", func(t *testing.T) {
		base := startFake(t, stream(`{"roster":[`, 1<<20))
		if elems, err := New(base, nil).Roster(t.Context()); err != nil || len(elems) != 0 {
			t.Errorf("Roster = %v, %v; want an empty roster", elems, err)
		}
	})
	t.Run("send drains", func(t *testing.T) {
		base := startFake(t, stream(`[`, 8<<20))
		if err := New(base, nil).Send(t.Context(), "K", []byte("1")); err != nil {
			t.Errorf("Send = %v, want nil", err)
		}
	})
}

// TestSendKeepsPayloadText: the payload reaches the bus as the sender wrote
// it, without HTML escaping of <, > and &.
func TestSendKeepsPayloadText(t *testing.T) {
	got := make(chan []byte, 1)
	url := startFake(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- b
		w.WriteHeader(http.StatusAccepted)
	})
	payload := []byte(`{"text":"<b>a & b</b>"}`)
	if err := New(url, nil).Send(t.Context(), "K#s", payload); err != nil {
		t.Fatal(err)
	}
	want := `{"to":"K#s","payload":{"text":"<b>a & b</b>"}}`
	if b := <-got; string(b) != want {
		t.Errorf("body %s, want %s", b, want)
	}
}
