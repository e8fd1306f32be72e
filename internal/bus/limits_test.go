package bus

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/keylimit"
	"github.com/interlink-go/interlink/internal/reqsign"
	"github.com/interlink-go/interlink/internal/store"
	"github.com/interlink-go/interlink/internal/testutil"
	"github.com/interlink-go/interlink/internal/wire"
)

// clock0 is where every fake clock starts.
var clock0 = newFakeClock().Now()

// limitedServer returns a bus whose limits allow burst requests and then
// one an hour, on clock.
func limitedServer(t *testing.T, clock *fakeClock, burst int) *Server {
	t.Helper()
	slow := keylimit.Rate{Every: time.Hour, Burst: burst}
	st := store.NewMemory(nil)
	t.Cleanup(func() { st.Close() })
	return New(st, &Options{Now: clock.Now, Limits: &Limits{Sends: slow, RosterUpdates: slow, Unsigned: slow}})
}

// signedRecorder serves one request, signed by s when s is not nil, from
// remote, at the system clock's time plus how far at is past clock0.
func signedRecorder(t *testing.T, srv *Server, s *identity.Signer, at time.Time, remote, method, target, body string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(method, "http://bus.test"+target, strings.NewReader(body))
	req.RemoteAddr = remote
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "application/json")
	}
	if s != nil {
		var b []byte
		if body != "" {
			b = []byte(body)
		}
		// Signatures are checked against the system clock; the bus's
		// clock, which the test moves, runs the buckets.
		if err := reqsign.Sign(req, b, s, time.Now().Add(at.Sub(clock0))); err != nil {
			t.Fatal(err)
		}
	}
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, req)
	return rec
}

func sendOf(t *testing.T, from *identity.Signer, to string) string {
	t.Helper()
	b, err := wire.SendBody(to, []byte(`{"from":"`+from.Public().String()+`","text":"hi"}`))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A key over its rate of sends, or of roster updates, gets 429 with the
// wait in Retry-After and nothing is stored; other keys are not held up,
// the refusals are counted by limit, and the key is served again once
// its bucket has a token.
func TestKeyOverItsRateGets429WithRetryAfter(t *testing.T) {
	clock := newFakeClock()
	srv := limitedServer(t, clock, 2)
	a, b := testutil.Signer(t, 1), testutil.Signer(t, 2)
	const remote = "198.51.100.7:5000"
	to := b.Public().String() + "#s"
	for i := range 2 {
		if rec := signedRecorder(t, srv, a, clock.Now(), remote, "POST", "/send", sendOf(t, a, to)); rec.Code != http.StatusAccepted {
			t.Fatalf("send %d: %d %s", i, rec.Code, rec.Body)
		}
	}
	rec := signedRecorder(t, srv, a, clock.Now(), remote, "POST", "/send", sendOf(t, a, to))
	if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") != "3600" {
		t.Fatalf("third send: %d Retry-After %q %s", rec.Code, rec.Header().Get("Retry-After"), rec.Body)
	}
	if !strings.Contains(rec.Body.String(), "too many sends from this key") {
		t.Errorf("body %s", rec.Body)
	}
	if got := srv.Stats().Stored; got != 2 {
		t.Errorf("stored %d, want 2", got)
	}
	// Another key from the same address is not held up.
	if rec := signedRecorder(t, srv, b, clock.Now(), remote, "POST", "/send", sendOf(t, b, to)); rec.Code != http.StatusAccepted {
		t.Errorf("another key's send: %d %s", rec.Code, rec.Body)
	}
	// Roster updates have a bucket of their own.
	ann := a.Announce("a", identity.SessionInfo{SessionID: "s"}, uint64(clock.Now().UnixMilli()))
	annBody, _ := wire.AnnounceBody(ann)
	for i := range 3 {
		rec := signedRecorder(t, srv, a, clock.Now(), remote, "POST", "/announce", string(annBody))
		if want := map[bool]int{true: 202, false: 429}[i < 2]; rec.Code != want {
			t.Fatalf("announcement %d: %d, want %d: %s", i, rec.Code, want, rec.Body)
		}
	}
	st := srv.Stats()
	if st.Limited[limitSends] != 1 || st.Limited[limitRoster] != 1 || st.Limited[limitAddress] != 0 {
		t.Errorf("limited %v, want one send and one roster update", st.Limited)
	}
	clock.Add(time.Hour)
	if rec := signedRecorder(t, srv, a, clock0, remote, "POST", "/send", sendOf(t, a, to)); rec.Code != http.StatusAccepted {
		t.Errorf("send after the wait: %d %s", rec.Code, rec.Body)
	}
}

// Unsigned requests of one address share one bucket, whatever their
// route; another address, a signed request from the same address and,
// on a bus that leaves loopback alone, this machine are not held up.
func TestUnsignedRequestsOfAnAddressShareOneBucket(t *testing.T) {
	clock := newFakeClock()
	srv := limitedServer(t, clock, 3)
	srv.guard.limitLoopback = true
	a := testutil.Signer(t, 1)
	const remote = "203.0.113.9:1000"
	ops := []struct{ method, target, body string }{
		{"POST", "/send", `{"to":"r1","payload":{}}`},
		{"GET", "/recv?me=r2&timeout_ms=0", ""},
		{"POST", "/announce", `{"pubkey":"k"}`},
		{"GET", "/roster", ""},
	}
	for i, op := range ops {
		rec := signedRecorder(t, srv, nil, clock.Now(), remote, op.method, op.target, op.body)
		want := http.StatusOK
		switch {
		case i >= 3:
			want = http.StatusTooManyRequests
		case op.method == "POST":
			want = http.StatusAccepted
		}
		if rec.Code != want {
			t.Fatalf("%s %s: %d, want %d: %s", op.method, op.target, rec.Code, want, rec.Body)
		}
	}
	if rec := signedRecorder(t, srv, nil, clock.Now(), "203.0.113.10:1000", "GET", "/roster", ""); rec.Code != http.StatusOK {
		t.Errorf("another address: %d", rec.Code)
	}
	if rec := signedRecorder(t, srv, a, clock.Now(), remote, "GET", "/roster", ""); rec.Code != http.StatusOK {
		t.Errorf("a signed request from the full address: %d %s", rec.Code, rec.Body)
	}
	// The /64 of an IPv6 address is one client.
	for i, remote := range []string{"[2001:db8::1]:1", "[2001:db8::2]:1", "[2001:db8::3]:1", "[2001:db8::4]:1"} {
		rec := signedRecorder(t, srv, nil, clock.Now(), remote, "GET", "/roster", "")
		if want := map[bool]int{true: 200, false: 429}[i < 3]; rec.Code != want {
			t.Errorf("IPv6 %s: %d, want %d", remote, rec.Code, want)
		}
	}
	if got := srv.Stats().Limited[limitAddress]; got != 2 {
		t.Errorf("limited by address %d, want 2", got)
	}

	srv.guard.limitLoopback = false
	for i := range 10 {
		if rec := signedRecorder(t, srv, nil, clock.Now(), "127.0.0.1:1", "GET", "/roster", ""); rec.Code != http.StatusOK {
			t.Fatalf("loopback request %d: %d", i, rec.Code)
		}
	}
}

// With --auth off nothing is verified or limited, as before requests
// were signed: even a request with a signature that cannot verify.
func TestAuthOffIgnoresSignaturesAndLimits(t *testing.T) {
	clock := newFakeClock()
	slow := keylimit.Rate{Every: time.Hour, Burst: 1}
	st := store.NewMemory(nil)
	t.Cleanup(func() { st.Close() })
	srv := New(st, &Options{Now: clock.Now, Auth: AuthOff, Limits: &Limits{Sends: slow, Unsigned: slow}})
	srv.guard.limitLoopback = true
	a, b := testutil.Signer(t, 1), testutil.Signer(t, 2)
	for i := range 3 {
		// Signed by b, naming a as sender, and an hour stale.
		rec := signedRecorder(t, srv, b, clock.Now().Add(-time.Hour), "198.51.100.1:1", "POST", "/send", sendOf(t, a, "r"))
		if rec.Code != http.StatusAccepted {
			t.Fatalf("send %d: %d %s", i, rec.Code, rec.Body)
		}
	}
}
