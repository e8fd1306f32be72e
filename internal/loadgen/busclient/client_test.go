package busclient

import (
	"context"
	"crypto/rand"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/reqsign"
)

// verifying answers /send with 202, /recv with a timeout and /ack with
// 200, and
// records, for each request, the key whose signature it verified ("" for
// an unsigned request, "bad" for one that does not verify).
type verifying struct {
	v    *reqsign.Verifier
	mu   sync.Mutex
	keys []string
}

func (s *verifying) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	key := ""
	if !reqsign.Unsigned(r.Header) {
		k, err := s.v.Verify(r, body, time.Now())
		key = k.String()
		if err != nil {
			key = "bad"
		}
	}
	s.mu.Lock()
	s.keys = append(s.keys, key)
	s.mu.Unlock()
	switch r.URL.Path {
	case "/send":
		w.WriteHeader(http.StatusAccepted)
	case "/recv":
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"status":"timeout"}`)
	default:
		w.WriteHeader(http.StatusOK)
	}
}

func newSigner(t *testing.T) *identity.Signer {
	t.Helper()
	seed := make([]byte, 32)
	rand.Read(seed)
	s, err := identity.NewSigner(seed)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestAsSignsEveryRequestByItsKeyAndTheParentNone checks that a client made
// by As signs its sends, polls and acks with its key, verifiably, while
// the client it came from stays unsigned, and that both count their dials
// together.
func TestAsSignsEveryRequestByItsKeyAndTheParentNone(t *testing.T) {
	ver, err := reqsign.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := &verifying{v: ver}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	ctx := context.Background()

	c := New(ts.URL, false, 1) // a connection per request, so each one dials
	defer c.Close()
	alice, bob := newSigner(t), newSigner(t)
	a, b := c.As(alice), c.As(bob)
	if err := a.Send(ctx, "r", []byte(`"x"`)); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Recv(ctx, "r", 0); err != ErrTimeout {
		t.Fatalf("poll: %v, want ErrTimeout", err)
	}
	if err := b.Ack(ctx, "r", "k"); err != nil {
		t.Fatal(err)
	}
	if err := c.Send(ctx, "r", []byte(`"y"`)); err != nil {
		t.Fatal(err)
	}
	want := []string{alice.Public().String(), bob.Public().String(), bob.Public().String(), ""}
	if got := strings.Join(srv.keys, " "); got != strings.Join(want, " ") {
		t.Errorf("signers of the requests: %q, want %q", got, want)
	}
	if c.Dials() != 4 || a.Dials() != 4 {
		t.Errorf("dials counted %d by the parent and %d by a signing client, want 4 by both", c.Dials(), a.Dials())
	}
}

// TestTrustSpeaksTLSToTheTrustedServer checks that a client trusting a
// server's certificate reaches it over HTTPS, and that a client trusting
// nothing does not.
func TestTrustSpeaksTLSToTheTrustedServer(t *testing.T) {
	srv := &verifying{v: mustVerifier(t)}
	ts := httptest.NewUnstartedServer(srv)
	ts.Config.ErrorLog = log.New(io.Discard, "", 0)
	ts.StartTLS()
	defer ts.Close()
	ctx := context.Background()

	trusted := New(ts.URL, true, 1)
	defer trusted.Close()
	trusted.Trust(ts.Client().Transport.(*http.Transport).TLSClientConfig)
	if err := trusted.Send(ctx, "r", []byte(`"x"`)); err != nil {
		t.Fatalf("send to the trusted server: %v", err)
	}
	c := New(ts.URL, true, 1)
	defer c.Close()
	if err := c.Send(ctx, "r", []byte(`"x"`)); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("a client trusting no certificate: %v, want a certificate error", err)
	}
	if n := len(srv.keys); n != 1 {
		t.Errorf("the server served %d requests, want only the trusted client's", n)
	}
}

func mustVerifier(t *testing.T) *reqsign.Verifier {
	t.Helper()
	v, err := reqsign.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
