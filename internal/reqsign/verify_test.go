package reqsign

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/interlink-go/interlink/internal/identity"
)

var t0 = time.UnixMilli(1700000000000)

func testSigner(t testing.TB, b byte) *identity.Signer {
	t.Helper()
	s, err := identity.NewSigner(bytes.Repeat([]byte{b}, identity.SeedSize))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func newVerifier(t testing.TB, opts *Options) *Verifier {
	t.Helper()
	v, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// signed returns a request as a server receives it (Host set), signed by s
// at at for body.
func signed(t testing.TB, s Signer, method, url, body string, at time.Time) *http.Request {
	t.Helper()
	req := httptest.NewRequest(method, url, strings.NewReader(body))
	if err := Sign(req, []byte(body), s, at); err != nil {
		t.Fatal(err)
	}
	return req
}

// TestSignedRequestVerifiesOverHTTP sends signed requests through a real
// client and server on loopback, so the authority and target the client
// signs are the ones net/http delivers, escapes and all.
func TestSignedRequestVerifiesOverHTTP(t *testing.T) {
	alice := testSigner(t, 1)
	v := newVerifier(t, nil)
	type result struct {
		key identity.PublicKey
		err error
	}
	got := make(chan result, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		k, err := v.Verify(r, body, time.Now())
		got <- result{k, err}
	}))
	defer srv.Close()
	for _, tc := range []struct{ method, path, body string }{
		{"POST", "/send", `{"to":"x#s1","payload":{"a":1}}`},
		{"GET", "/recv?me=O2onvM62pC1io6jQKm8Nc2UyFXcd4kOmOsBIoYtZ2ik%23s%201&timeout_ms=0", ""},
		{"GET", "/a%2Fb/%41?q=%zz&&x", ""},
		{"DELETE", "/", ""},
	} {
		req, err := http.NewRequestWithContext(t.Context(), tc.method, srv.URL+tc.path, strings.NewReader(tc.body))
		if err != nil {
			t.Fatal(err)
		}
		if err := Sign(req, []byte(tc.body), alice, time.Now()); err != nil {
			t.Fatal(err)
		}
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		r := <-got
		if r.err != nil || r.key != alice.Public() {
			t.Errorf("%s %s: key %v, err %v", tc.method, tc.path, r.key, r.err)
		}
	}
}

// TestRefusals proves each refusal with its sentinel: every header
// missing, repeated or malformed; a signature that does not cover what
// the server received (method, target, query, body, authority, key); the
// time window on both sides.
func TestRefusals(t *testing.T) {
	alice, bob := testSigner(t, 1), testSigner(t, 2)
	const url, body = "http://relay.example/send?x=1", `{"to":"r","payload":1}`
	good := func() *http.Request { return signed(t, alice, "POST", url, body, t0) }
	tests := []struct {
		name   string
		req    func() *http.Request
		body   string
		now    time.Time
		want   error
		header string // for header errors
	}{
		{name: "no headers", req: func() *http.Request { return httptest.NewRequest("POST", url, nil) }, want: ErrMissing, header: HeaderKey},
		{name: "no key", req: dropHeader(good, HeaderKey), want: ErrMissing, header: HeaderKey},
		{name: "no time", req: dropHeader(good, HeaderTime), want: ErrMissing, header: HeaderTime},
		{name: "no nonce", req: dropHeader(good, HeaderNonce), want: ErrMissing, header: HeaderNonce},
		{name: "no signature", req: dropHeader(good, HeaderSignature), want: ErrMissing, header: HeaderSignature},
		{name: "key twice", req: addHeader(good, HeaderKey, bob.Public().String()), want: ErrMalformed, header: HeaderKey},
		{name: "nonce twice", req: addHeader(good, HeaderNonce, "AAAAAAAAAAAAAAAAAAAAAA"), want: ErrMalformed, header: HeaderNonce},
		{name: "key padded", req: setHeader(good, HeaderKey, alice.Public().String()+"="), want: ErrMalformed, header: HeaderKey},
		{name: "key with newline", req: setHeader(good, HeaderKey, alice.Public().String()[:20]+"\n"+alice.Public().String()[20:]), want: ErrMalformed, header: HeaderKey},
		{name: "key not a point", req: setHeader(good, HeaderKey, "7P____________________________________________"), want: ErrMalformed, header: HeaderKey},
		{name: "time signed", req: setHeader(good, HeaderTime, "+1700000000000"), want: ErrMalformed, header: HeaderTime},
		{name: "time leading zero", req: setHeader(good, HeaderTime, "01700000000000"), want: ErrMalformed, header: HeaderTime},
		{name: "time overflow", req: setHeader(good, HeaderTime, "18446744073709551616"), want: ErrMalformed, header: HeaderTime},
		{name: "time fraction", req: setHeader(good, HeaderTime, "1700000000000.5"), want: ErrMalformed, header: HeaderTime},
		{name: "nonce short", req: setHeader(good, HeaderNonce, "AAAAAAAAAAAAAAAAAAAA"), want: ErrMalformed, header: HeaderNonce},
		{name: "nonce standard alphabet", req: setHeader(good, HeaderNonce, "+AAAAAAAAAAAAAAAAAAAAA"), want: ErrMalformed, header: HeaderNonce},
		{name: "signature huge", req: setHeader(good, HeaderSignature, strings.Repeat("A", 4000)), want: ErrMalformed, header: HeaderSignature},
		{name: "signature non-canonical bits", req: func() *http.Request {
			r := good()
			s := r.Header.Get(HeaderSignature)
			r.Header.Set(HeaderSignature, s[:85]+"B") // last char carries 4 unused bits
			return r
		}, want: ErrMalformed, header: HeaderSignature},
		{name: "other method", req: func() *http.Request { r := good(); r.Method = "PUT"; return r }, want: ErrBadSignature},
		{name: "other path", req: func() *http.Request {
			r := good()
			r.URL.Path = "/ack"
			return r
		}, want: ErrBadSignature},
		{name: "other query", req: func() *http.Request { r := good(); r.URL.RawQuery = "x=2"; return r }, want: ErrBadSignature},
		{name: "other body", req: good, body: body + " ", want: ErrBadSignature},
		{name: "other authority", req: func() *http.Request { r := good(); r.Host = "other.example"; return r }, want: ErrBadSignature},
		{name: "other port", req: func() *http.Request { r := good(); r.Host = "relay.example:8080"; return r }, want: ErrBadSignature},
		{name: "key swapped", req: setHeader(good, HeaderKey, bob.Public().String()), want: ErrBadSignature},
		{name: "time changed", req: setHeader(good, HeaderTime, "1700000000001"), want: ErrBadSignature},
		{name: "nonce changed", req: setHeader(good, HeaderNonce, "AAAAAAAAAAAAAAAAAAAAAA"), want: ErrBadSignature},
		{name: "small-order key", req: func() *http.Request {
			r := good()
			// The identity point with R = identity and S = 0 verifies any
			// message under crypto/ed25519 alone.
			r.Header.Set(HeaderKey, "AQAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA")
			r.Header.Set(HeaderSignature, "AQAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA")
			return r
		}, want: ErrBadSignature},
		{name: "stale", req: good, now: t0.Add(MaxPast + time.Millisecond), want: ErrStale},
		{name: "future", req: good, now: t0.Add(-MaxFuture - time.Millisecond), want: ErrFuture},
		{name: "stale at the limit is fresh", req: good, now: t0.Add(MaxPast)},
		{name: "future at the limit is fresh", req: good, now: t0.Add(-MaxFuture)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			now := tc.now
			if now.IsZero() {
				now = t0
			}
			b := body
			if tc.body != "" {
				b = tc.body
			}
			_, err := newVerifier(t, nil).Verify(tc.req(), []byte(b), now)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			if tc.header != "" {
				var he *HeaderError
				if !errors.As(err, &he) || he.Header != tc.header {
					t.Fatalf("err = %#v, want a HeaderError for %s", err, tc.header)
				}
				if !strings.Contains(err.Error(), tc.header) {
					t.Errorf("message %q does not name %s", err, tc.header)
				}
			}
		})
	}
}

func dropHeader(f func() *http.Request, name string) func() *http.Request {
	return func() *http.Request { r := f(); r.Header.Del(name); return r }
}

func setHeader(f func() *http.Request, name, val string) func() *http.Request {
	return func() *http.Request { r := f(); r.Header.Set(name, val); return r }
}

func addHeader(f func() *http.Request, name, val string) func() *http.Request {
	return func() *http.Request { r := f(); r.Header.Add(name, val); return r }
}

// TestUnsigned tells a request that does not sign from one that signs
// partly.
func TestUnsigned(t *testing.T) {
	r := httptest.NewRequest("GET", "/roster", nil)
	if !Unsigned(r.Header) {
		t.Error("request without headers is not unsigned")
	}
	r.Header.Set(HeaderNonce, "x")
	if Unsigned(r.Header) {
		t.Error("request with a nonce header is unsigned")
	}
}

// TestOtherDomainsDoNotVerify proves the domain separation: a signature
// over the same bytes with the messages' or announcements' domain in place
// of the request domain is refused.
func TestOtherDomainsDoNotVerify(t *testing.T) {
	alice := testSigner(t, 1)
	req := signed(t, alice, "GET", "http://relay.example/roster", "", t0)
	h, _ := ParseHeaders(req.Header)
	c, _ := RequestCanonical(req)
	c.Key, c.TimeMS, c.Nonce = h.Key, h.TimeMS, h.Nonce
	c.BodyHash = [32]byte{0xe3, 0xb0, 0xc4, 0x42, 0x98, 0xfc, 0x1c, 0x14, 0x9a, 0xfb, 0xf4, 0xc8, 0x99, 0x6f, 0xb9, 0x24, 0x27, 0xae, 0x41, 0xe4, 0x64, 0x9b, 0x93, 0x4c, 0xa4, 0x95, 0x99, 0x1b, 0x78, 0x52, 0xb8, 0x55}
	for _, domain := range []string{identity.Domain, "interlink-announce-v1\x00"} {
		msg := append([]byte(domain), c.Bytes()[len(Domain):]...)
		forged := req.Clone(t.Context())
		forged.Header.Set(HeaderSignature, identity.EncodeBase64(alice.Sign(msg)))
		if _, err := newVerifier(t, nil).Verify(forged, nil, t0); !errors.Is(err, ErrBadSignature) {
			t.Errorf("domain %q: err = %v, want ErrBadSignature", domain, err)
		}
	}
	if _, err := newVerifier(t, nil).Verify(req, nil, t0); err != nil {
		t.Errorf("genuine request refused: %v", err)
	}
}

// TestReplayRefusedForTheWholeWindow replays one request at every point
// of its window, then after it: refused as a replay while it is fresh,
// then as stale, never accepted again.
func TestReplayRefusedForTheWholeWindow(t *testing.T) {
	alice := testSigner(t, 1)
	v := newVerifier(t, nil)
	req := signed(t, alice, "POST", "http://relay.example/ack", "{}", t0)
	if _, err := v.Verify(req, []byte("{}"), t0.Add(-MaxFuture)); err != nil {
		t.Fatal(err)
	}
	for _, at := range []time.Duration{-MaxFuture, 0, time.Minute, MaxPast} {
		if _, err := v.Verify(req, []byte("{}"), t0.Add(at)); !errors.Is(err, ErrReplay) {
			t.Errorf("replay at %v: err = %v, want ErrReplay", at, err)
		}
	}
	if _, err := v.Verify(req, []byte("{}"), t0.Add(MaxPast+time.Millisecond)); !errors.Is(err, ErrStale) {
		t.Errorf("replay after the window: err = %v, want ErrStale", err)
	}
	// The entry has now expired and is gone, and the request stays refused
	// even if the verifier's clock steps back into the window.
	if n := v.Nonces(); n != 0 {
		t.Errorf("nonces after the window = %d, want 0", n)
	}
	if _, err := v.Verify(req, []byte("{}"), t0); !errors.Is(err, ErrStale) {
		t.Errorf("replay with the clock stepped back: err = %v, want ErrStale", err)
	}
}

// TestShareFullRefusesRatherThanForgets fills one key's share and checks
// that its further requests are refused with ErrShareFull while its
// earlier nonces stay remembered, that another key is served meanwhile,
// and that the key is served again once its entries expire.
func TestShareFullRefusesRatherThanForgets(t *testing.T) {
	alice, bob := testSigner(t, 1), testSigner(t, 2)
	v := newVerifier(t, &Options{PerKey: 8, Total: 1000})
	var first *http.Request
	for i := range 8 {
		r := signed(t, alice, "GET", "http://relay.example/roster", "", t0)
		if i == 0 {
			first = r
		}
		if _, err := v.Verify(r, nil, t0); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
	}
	if _, err := v.Verify(signed(t, alice, "GET", "http://relay.example/roster", "", t0), nil, t0); !errors.Is(err, ErrShareFull) {
		t.Fatalf("ninth request: err = %v, want ErrShareFull", err)
	}
	if _, err := v.Verify(first, nil, t0); !errors.Is(err, ErrReplay) {
		t.Errorf("first request replayed: err = %v, want ErrReplay", err)
	}
	if _, err := v.Verify(signed(t, bob, "GET", "http://relay.example/roster", "", t0), nil, t0); err != nil {
		t.Errorf("other key refused: %v", err)
	}
	later := t0.Add(MaxPast + time.Millisecond)
	if _, err := v.Verify(signed(t, alice, "GET", "http://relay.example/roster", "", later), nil, later); err != nil {
		t.Errorf("after the window: %v", err)
	}
}

// TestNoKeyEvictsAnother fills the total with many keys and checks that a
// flooding key gets at most half of what the others leave free, that
// nothing of another key is forgotten, and that the total is never
// exceeded.
func TestNoKeyEvictsAnother(t *testing.T) {
	const total = 40
	v := newVerifier(t, &Options{PerKey: total, Total: total})
	victim := testSigner(t, 9)
	var victimReqs []*http.Request
	for range 4 {
		r := signed(t, victim, "GET", "http://relay.example/recv?me=v", "", t0)
		if _, err := v.Verify(r, nil, t0); err != nil {
			t.Fatal(err)
		}
		victimReqs = append(victimReqs, r)
	}
	flood := testSigner(t, 10)
	accepted := 0
	for range 100 {
		if _, err := v.Verify(signed(t, flood, "GET", "http://relay.example/roster", "", t0), nil, t0); err == nil {
			accepted++
		} else if !errors.Is(err, ErrShareFull) {
			t.Fatalf("flood: %v", err)
		}
	}
	if want := (total - 4) / 2; accepted != want {
		t.Errorf("flooding key got %d nonces, want half of the %d left free: %d", accepted, total-4, want)
	}
	// More flooding keys fill the rest, each within its share.
	for b := byte(11); b < 40; b++ {
		for range 10 {
			v.Verify(signed(t, testSigner(t, b), "GET", "http://relay.example/roster", "", t0), nil, t0) //nolint:errcheck // filling
		}
	}
	if n := v.Nonces(); n > total {
		t.Errorf("nonces = %d, above the total %d", n, total)
	}
	for i, r := range victimReqs {
		if _, err := v.Verify(r, nil, t0); !errors.Is(err, ErrReplay) {
			t.Errorf("victim request %d replayed after the flood: err = %v, want ErrReplay", i, err)
		}
	}
}

// TestProxyAlternatives accepts a request signed for a proxy's name and
// path prefix only when the verifier is configured with them.
func TestProxyAlternatives(t *testing.T) {
	alice := testSigner(t, 1)
	// The client addressed https://relay.example/bus/send; the proxy
	// forwarded it to 127.0.0.1:9440/send.
	mk := func() *http.Request {
		r := signed(t, alice, "POST", "https://relay.example/bus/send", "{}", t0)
		r.Host = "127.0.0.1:9440"
		r.URL.Path = "/send"
		return r
	}
	if _, err := newVerifier(t, nil).Verify(mk(), []byte("{}"), t0); !errors.Is(err, ErrBadSignature) {
		t.Errorf("without configuration: err = %v, want ErrBadSignature", err)
	}
	if _, err := newVerifier(t, &Options{Authorities: []string{"relay.example"}}).Verify(mk(), []byte("{}"), t0); !errors.Is(err, ErrBadSignature) {
		t.Errorf("authority alone: err = %v, want ErrBadSignature", err)
	}
	v := newVerifier(t, &Options{Authorities: []string{"Relay.Example"}, PathPrefixes: []string{"/bus"}})
	if _, err := v.Verify(mk(), []byte("{}"), t0); err != nil {
		t.Errorf("with the proxy's name and prefix: %v", err)
	}
}

// TestOptionsRefused checks the bounds on verifier options.
func TestOptionsRefused(t *testing.T) {
	many := make([]string, MaxAlternatives)
	for i := range many {
		many[i] = "h" + string(rune('a'+i))
	}
	for name, o := range map[string]*Options{
		"too many":        {Authorities: many},
		"empty authority": {Authorities: []string{""}},
		"prefix no slash": {PathPrefixes: []string{"bus"}},
		"prefix trailing": {PathPrefixes: []string{"/bus/"}},
	} {
		if _, err := New(o); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestSignRefusesNonASCIIHost checks that a host the HTTP client would
// rewrite to punycode is refused rather than signed as something else.
func TestSignRefusesNonASCIIHost(t *testing.T) {
	req, _ := http.NewRequest("GET", "http://bücher.example/roster", nil)
	if err := Sign(req, nil, testSigner(t, 1), t0); err == nil {
		t.Error("signed a non-ASCII host")
	}
}

// TestAuthority checks the signed form of hosts.
func TestAuthority(t *testing.T) {
	for in, want := range map[string]string{
		"Relay.EXAMPLE:9440":   "relay.example:9440",
		"[fe80::1%25eth0]:443": "[fe80::1]:443",
		"[FE80::1]":            "[fe80::1]",
		"127.0.0.1":            "127.0.0.1",
	} {
		if got := Authority(in); got != want {
			t.Errorf("Authority(%q) = %q, want %q", in, got, want)
		}
	}
}
