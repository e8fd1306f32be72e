package bus

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/interlink-go/interlink/internal/wire"
)

func TestSendThenRecvReturnsTheEnvelope(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind storeKind) {
		h := newHarness(t, kind.open(t, 0), 0)
		rec := h.do(http.MethodPost, "/send", `{"to":"K#s1","payload":{"text":"hi","n":[1,2.5,null]}}`)
		if rec.Code != http.StatusAccepted || rec.Body.Len() != 0 {
			t.Fatalf("send: %d %q, want 202 and an empty body", rec.Code, rec.Body)
		}
		rec = h.do(http.MethodGet, "/recv?me=K%23s1&timeout_ms=0", "")
		if got := rec.Header().Get("Content-Type"); got != "application/json" {
			t.Errorf("Content-Type = %q", got)
		}
		raw := rec.Body.Bytes()
		if !bytes.Contains(raw, []byte(`\u0000`)) {
			t.Errorf("ack key should carry its NUL as \\u0000: %s", raw)
		}
		r := decodeReply(t, raw)
		if r.Status != "message" {
			t.Fatalf("status = %q, want message", r.Status)
		}
		if diff := jsonDiff(t, r.Envelope.Payload, []byte(`{"text":"hi","n":[1,2.5,null]}`)); diff != "" {
			t.Errorf("payload (-want +got):\n%s", diff)
		}
		if r.Envelope.TS != testEpoch {
			t.Errorf("ts = %d, want the bus clock %d", r.Envelope.TS, int64(testEpoch))
		}
		if !regexp.MustCompile("^K#s1\x00[0-9]{20}$").MatchString(r.Ack) {
			t.Errorf("ack key %q does not match route NUL 20 digits", r.Ack)
		}
	})
}

// TestEnvelopeStampFollowsTheWallClock checks the envelope stamp against the wall clock.
func TestEnvelopeStampFollowsTheWallClock(t *testing.T) {
	st := newFakeStore(0)
	srv := New(st, nil)
	before := time.Now().UnixMilli()
	serveOnce(srv, http.MethodPost, "/send", `{"to":"r","payload":1}`)
	after := time.Now().UnixMilli()
	e, ok, err := st.Peek("r")
	if err != nil || !ok {
		t.Fatalf("peek: %v %v", ok, err)
	}
	var env struct{ TS int64 }
	if err := json.Unmarshal(e.Value, &env); err != nil {
		t.Fatal(err)
	}
	if env.TS < before || env.TS > after {
		t.Errorf("ts %d outside [%d, %d]", env.TS, before, after)
	}
}

func TestRecvTimesOutWithoutAMessage(t *testing.T) {
	h, _ := newFakeHarness(t, 0)
	start := time.Now()
	rec := h.do(http.MethodGet, "/recv?me=nobody&timeout_ms=0", "")
	if rec.Code != http.StatusOK || rec.Body.String() != `{"status":"timeout"}` {
		t.Fatalf("timeout_ms=0: %d %s", rec.Code, rec.Body)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("timeout_ms=0 took %v", d)
	}

	start = time.Now()
	rec = h.do(http.MethodGet, "/recv?me=nobody&timeout_ms=200", "")
	d := time.Since(start)
	if rec.Code != http.StatusOK || rec.Body.String() != `{"status":"timeout"}` {
		t.Fatalf("timeout_ms=200: %d %s", rec.Code, rec.Body)
	}
	if d < 200*time.Millisecond || d > 5*time.Second {
		t.Errorf("timeout_ms=200 returned after %v", d)
	}
	if n := h.srv.waiters.len(); n != 0 {
		t.Errorf("waiter map holds %d routes after the timeout", n)
	}
}

// TestRecvTimeoutHasADefaultAndACap runs on synctest's fake time, so the 25 s default
// and the 120 s clamp are measured exactly without waiting for them.
func TestRecvTimeoutHasADefaultAndACap(t *testing.T) {
	cases := []struct {
		name    string
		query   string
		maxWait time.Duration
		want    time.Duration
	}{
		{"omitted", "me=x", 0, DefaultRecvTimeout},
		{"explicit", "me=x&timeout_ms=1500", 0, 1500 * time.Millisecond},
		{"clamped", "me=x&timeout_ms=120001", 0, MaxRecvTimeout},
		{"u64 max", "me=x&timeout_ms=18446744073709551615", 0, MaxRecvTimeout},
		{"omitted, short limit", "me=x", 100 * time.Millisecond, 100 * time.Millisecond},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := New(newFakeStore(0), &Options{MaxRecvTimeout: tc.maxWait})
				start := time.Now()
				rec := serveOnce(srv, http.MethodGet, "/recv?"+tc.query, "")
				if got := time.Since(start); got != tc.want {
					t.Errorf("waited %v, want %v", got, tc.want)
				}
				if got := rec.Body.String(); got != `{"status":"timeout"}` {
					t.Errorf("body = %s", got)
				}
			})
		})
	}
}

func TestRecvQueryIsChecked(t *testing.T) {
	h, _ := newFakeHarness(t, 0)
	h.srv.maxWait = 20 * time.Millisecond
	cases := []struct {
		query string
		want  int
	}{
		{"", http.StatusBadRequest},
		{"timeout_ms=0", http.StatusBadRequest},
		{"me=a&timeout_ms=abc", http.StatusBadRequest},
		{"me=a&timeout_ms=-1", http.StatusBadRequest},
		{"me=a&timeout_ms=", http.StatusBadRequest},
		{"me=a&timeout_ms=1.5", http.StatusBadRequest},
		{"me=a&timeout_ms=18446744073709551616", http.StatusBadRequest},
		{"me=a&me=b", http.StatusBadRequest},
		{"me=a&timeout_ms=0&timeout_ms=1", http.StatusBadRequest},
		{"me=%zz", http.StatusBadRequest},
		{"me=a&timeout_ms=18446744073709551615", http.StatusOK},
		{"me=&timeout_ms=0", http.StatusOK},
		{"me=a&timeout_ms=0&unknown=1", http.StatusOK},
		{"timeout_ms=0&me=a", http.StatusOK},
	}
	for _, tc := range cases {
		t.Run(tc.query, func(t *testing.T) {
			rec := h.do(http.MethodGet, "/recv?"+tc.query, "")
			if rec.Code != tc.want {
				t.Fatalf("%d %s, want %d", rec.Code, rec.Body, tc.want)
			}
			checkErrorBody(t, rec.Code, rec.Body.Bytes())
		})
	}
}

func TestDecodeRecvQuery(t *testing.T) {
	cases := []struct {
		query string
		me    string
		wait  time.Duration
	}{
		{"me=a", "a", DefaultRecvTimeout},
		{"me=a&timeout_ms=0", "a", 0},
		{"me=a&timeout_ms=5", "a", 5 * time.Millisecond},
		{"me=a&timeout_ms=120000", "a", MaxRecvTimeout},
		{"me=a&timeout_ms=120001", "a", MaxRecvTimeout},
		{"me=a&timeout_ms=9223372036854775807", "a", MaxRecvTimeout},
		{"me=a&timeout_ms=18446744073709551615", "a", MaxRecvTimeout},
		{"me=K%23s1", "K#s1", DefaultRecvTimeout},
		{"me=a+b", "a b", DefaultRecvTimeout},
		{"me=a%2Bb", "a+b", DefaultRecvTimeout},
		{"me=", "", DefaultRecvTimeout},
	}
	for _, tc := range cases {
		q, err := wire.DecodeRecvQuery(tc.query, MaxRecvTimeout)
		if err != nil {
			t.Errorf("%s: %v", tc.query, err)
			continue
		}
		if q.Me != tc.me || q.Wait != tc.wait {
			t.Errorf("%s: me %q wait %v, want %q %v", tc.query, q.Me, q.Wait, tc.me, tc.wait)
		}
	}
}

// postRoutes lists each POST route with a body it accepts.
var postRoutes = []struct {
	path string
	good string
}{
	{"/send", `{"to":"a","payload":1}`},
	{"/ack", `{"me":"a","ack":"a\u000000000000000000000001"}`},
	{"/announce", `{"pubkey":"k"}`},
	{"/unregister", `{"pubkey":"k"}`},
}

func TestMalformedJSONIsRefused(t *testing.T) {
	bodies := map[string]string{
		"syntax error":        `{"to":`,
		"empty":               ``,
		"whitespace only":     " \n",
		"trailing bytes":      `{"to":"a","payload":1} x`,
		"second value":        `{"to":"a","payload":1}{}`,
		"bare word":           `nul`,
		"single quotes":       `{'to':'a'}`,
		"invalid UTF-8":       "{\"to\":\"a\",\"payload\":\"\xff\",\"pubkey\":\"k\",\"me\":\"a\",\"ack\":\"a\"}",
		"lone high surrogate": `{"to":"a","payload":"\ud800","pubkey":"k","me":"a","ack":"a"}`,
		"lone low surrogate":  `{"to":"a","payload":"\udc00x","pubkey":"k","me":"a","ack":"a"}`,
		"reversed surrogates": `{"to":"a","payload":"\udc00\ud800","pubkey":"k","me":"a","ack":"a"}`,
		"number out of range": `{"to":"a","pubkey":"k","me":"a","ack":"a","payload":[1e309]}`,
		"long number":         `{"to":"a","pubkey":"k","me":"a","ack":"a","payload":-1` + strings.Repeat("0", 400) + `}`,
		"too deep":            `{"to":"a","pubkey":"k","payload":` + strings.Repeat("[", wire.MaxDepth) + strings.Repeat("]", wire.MaxDepth) + `}`,
	}
	for _, route := range postRoutes {
		for name, body := range bodies {
			t.Run(route.path+"/"+name, func(t *testing.T) {
				h, _ := newFakeHarness(t, 0)
				rec := h.do(http.MethodPost, route.path, body)
				if rec.Code != http.StatusBadRequest {
					t.Fatalf("%d %s, want 400", rec.Code, rec.Body)
				}
				checkErrorBody(t, rec.Code, rec.Body.Bytes())
			})
		}
	}
}

// TestStrictJSONAccepts checks that the extra checks let through what is
// valid: paired surrogates, escaped quotes and backslashes before a u, big
// and tiny numbers that a float64 holds, and nesting right at the limit.
func TestStrictJSONAccepts(t *testing.T) {
	payloads := []string{
		`"\ud83d\ude00"`,
		`"\\ud800"`,
		`"\"\\\u0041"`,
		`"emoji 😀 and \u00e9"`,
		strings.Repeat("[", wire.MaxDepth-1) + strings.Repeat("]", wire.MaxDepth-1),
		" \t\r\n1 ",
		`[1e308,-1.5E-400,18446744073709551616,123456789012345678901234567890,0.000000000000000000001]`,
	}
	for _, p := range payloads {
		h, _ := newFakeHarness(t, 0)
		if code := h.post("/send", `{"to":"a","payload":`+p+`}`+"\n"); code != http.StatusAccepted {
			t.Errorf("payload %.40q: %d, want 202", p, code)
		}
	}
}

func TestBodiesOfTheWrongShapeAreRefused(t *testing.T) {
	cases := []struct {
		path, body string
		want       int
	}{
		{"/send", `{"to":1,"payload":1}`, http.StatusUnprocessableEntity},
		{"/send", `{"to":null,"payload":1}`, http.StatusUnprocessableEntity},
		{"/send", `{"to":["a"],"payload":1}`, http.StatusUnprocessableEntity},
		{"/send", `{"payload":1}`, http.StatusUnprocessableEntity},
		{"/send", `{"to":"a"}`, http.StatusUnprocessableEntity},
		{"/send", `{"TO":"a","payload":1}`, http.StatusUnprocessableEntity},
		{"/send", `[]`, http.StatusUnprocessableEntity},
		{"/send", `null`, http.StatusUnprocessableEntity},
		{"/send", `"a"`, http.StatusUnprocessableEntity},
		{"/send", `3`, http.StatusUnprocessableEntity},
		{"/send", `{"to":"a","payload":null}`, http.StatusAccepted},
		{"/send", `{"to":"a","payload":1,"extra":{"x":[1]},"cc":"b"}`, http.StatusAccepted},
		{"/send", `{"to":"","payload":1}`, http.StatusAccepted},
		{"/ack", `{"me":"a"}`, http.StatusUnprocessableEntity},
		{"/ack", `{"ack":"a\u00001"}`, http.StatusUnprocessableEntity},
		{"/ack", `{"me":"a","ack":1}`, http.StatusUnprocessableEntity},
		{"/ack", `{"me":1,"ack":"a\u00001"}`, http.StatusUnprocessableEntity},
		{"/ack", `{"me":"a","ack":null}`, http.StatusUnprocessableEntity},
		{"/ack", `[]`, http.StatusUnprocessableEntity},
		{"/ack", `{"me":"a","ack":"a\u00001","extra":true}`, http.StatusOK},
	}
	for _, tc := range cases {
		t.Run(tc.path+" "+tc.body, func(t *testing.T) {
			h, _ := newFakeHarness(t, 0)
			rec := h.do(http.MethodPost, tc.path, tc.body)
			if rec.Code != tc.want {
				t.Fatalf("%d %s, want %d", rec.Code, rec.Body, tc.want)
			}
			checkErrorBody(t, rec.Code, rec.Body.Bytes())
		})
	}
}

func TestBodiesMustBeJSON(t *testing.T) {
	cases := []struct {
		contentType string
		ok          bool
	}{
		{"-", false},
		{"", false},
		{"text/plain", false},
		{"application/x-www-form-urlencoded", false},
		{"application/jsonx", false},
		{"application/+json", false},
		{"text/json", false},
		{"application/json; charset", false},
		{"application/json", true},
		{"application/json; charset=utf-8", true},
		{"Application/JSON", true},
		{"application/x+json", true},
		{"application/vnd.interlink+json; v=1", true},
	}
	for _, route := range postRoutes {
		for _, tc := range cases {
			t.Run(route.path+" "+tc.contentType, func(t *testing.T) {
				h, _ := newFakeHarness(t, 0)
				rec := h.do(http.MethodPost, route.path, route.good, tc.contentType)
				if tc.ok && rec.Code/100 != 2 {
					t.Fatalf("%d %s, want 2xx", rec.Code, rec.Body)
				}
				if !tc.ok && rec.Code != http.StatusUnsupportedMediaType {
					t.Fatalf("%d %s, want 415", rec.Code, rec.Body)
				}
				checkErrorBody(t, rec.Code, rec.Body.Bytes())
			})
		}
	}
}

// paddedBody returns a JSON body of exactly n bytes: prefix, a string of
// x's, and suffix.
func paddedBody(tb testing.TB, prefix, suffix string, n int) []byte {
	tb.Helper()
	pad := n - len(prefix) - len(suffix)
	if pad < 0 {
		tb.Fatalf("cannot pad to %d bytes", n)
	}
	return []byte(prefix + strings.Repeat("x", pad) + suffix)
}

// hideLen hides a reader's length, so the client sends it chunked.
type hideLen struct{ io.Reader }

func TestBodiesOverTheLimitAreRefused(t *testing.T) {
	h, _ := newFakeHarness(t, 0)
	base := h.listen()
	client := &http.Client{Timeout: 30 * time.Second}
	cases := []struct {
		name, path, prefix, suffix string
		n, want                    int
	}{
		{"send at limit", "/send", `{"to":"big","payload":"`, `"}`, wire.MaxBodyBytes, http.StatusAccepted},
		{"send over limit", "/send", `{"to":"big","payload":"`, `"}`, wire.MaxBodyBytes + 1, http.StatusRequestEntityTooLarge},
		{"ack at limit", "/ack", `{"me":"a","ack":"b","pad":"`, `"}`, wire.MaxBodyBytes, http.StatusForbidden},
		{"ack over limit", "/ack", `{"me":"a","ack":"b","pad":"`, `"}`, wire.MaxBodyBytes + 1, http.StatusRequestEntityTooLarge},
		{"unregister at limit", "/unregister", `{"pubkey":"k","pad":"`, `"}`, wire.MaxBodyBytes, http.StatusAccepted},
		{"unregister over limit", "/unregister", `{"pubkey":"k","pad":"`, `"}`, wire.MaxBodyBytes + 1, http.StatusRequestEntityTooLarge},
		{"announce at limit", "/announce", `{"pubkey":"k","pad":"`, `"}`, wire.MaxAnnounceBytes, http.StatusAccepted},
		{"announce over limit", "/announce", `{"pubkey":"k","pad":"`, `"}`, wire.MaxAnnounceBytes + 1, http.StatusRequestEntityTooLarge},
		{"send 3 MiB", "/send", `{"to":"big","payload":"`, `"}`, 3 << 20, http.StatusRequestEntityTooLarge},
	}
	for _, tc := range cases {
		body := paddedBody(t, tc.prefix, tc.suffix, tc.n)
		for _, chunked := range []bool{false, true} {
			name := tc.name + " content-length"
			if chunked {
				name = tc.name + " chunked"
			}
			t.Run(name, func(t *testing.T) {
				var rd io.Reader = bytes.NewReader(body)
				if chunked {
					rd = hideLen{rd}
				}
				req, err := http.NewRequest(http.MethodPost, base+tc.path, rd)
				if err != nil {
					t.Fatal(err)
				}
				req.Header.Set("Content-Type", "application/json")
				code, resp := httpDo(t, client, req)
				if code != tc.want {
					t.Fatalf("%d %.200s, want %d", code, resp, tc.want)
				}
				checkErrorBody(t, code, resp)
			})
		}
	}
	// The two accepted sends are both queued, byte for byte.
	if n := h.depth("big"); n != 2 {
		t.Errorf("depth of big = %d, want 2", n)
	}
	r := h.poll("big", 0)
	if want := wire.MaxBodyBytes - len(`{"to":"big","payload":}`); len(r.Envelope.Payload) != want {
		t.Errorf("payload is %d bytes, want %d", len(r.Envelope.Payload), want)
	}
}

func TestUnknownPathsAndMethodsAreRefused(t *testing.T) {
	h, _ := newFakeHarness(t, 0)
	base := h.listen()
	cases := []struct {
		method, path string
		want         int
		allow        string
	}{
		{http.MethodGet, "/nope", http.StatusNotFound, ""},
		{http.MethodGet, "//", http.StatusNotFound, ""},
		{http.MethodPost, "/send/", http.StatusNotFound, ""},
		{http.MethodPost, "/SEND", http.StatusNotFound, ""},
		{http.MethodGet, "/recv/x", http.StatusNotFound, ""},
		{http.MethodGet, "/send", http.StatusMethodNotAllowed, "POST"},
		{http.MethodPut, "/ack", http.StatusMethodNotAllowed, "POST"},
		{http.MethodHead, "/announce", http.StatusMethodNotAllowed, "POST"},
		{http.MethodGet, "/unregister", http.StatusMethodNotAllowed, "POST"},
		{http.MethodPost, "/recv", http.StatusMethodNotAllowed, "GET, HEAD"},
		{http.MethodDelete, "/roster", http.StatusMethodNotAllowed, "GET, HEAD"},
		{http.MethodPost, "/healthz", http.StatusMethodNotAllowed, "GET, HEAD"},
		{http.MethodPost, "/", http.StatusMethodNotAllowed, "GET, HEAD"},
		{http.MethodHead, "/roster", http.StatusOK, ""},
		{http.MethodHead, "/healthz", http.StatusOK, ""},
		{http.MethodHead, "/recv?me=a&timeout_ms=0", http.StatusOK, ""},
		{http.MethodGet, "/roster?ignored=1", http.StatusOK, ""},
		{http.MethodGet, "/healthz", http.StatusOK, ""},
	}
	for _, tc := range cases {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			req, err := http.NewRequest(tc.method, base+tc.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Fatalf("%d %s, want %d", resp.StatusCode, body, tc.want)
			}
			if got := resp.Header.Get("Allow"); got != tc.allow {
				t.Errorf("Allow = %q, want %q", got, tc.allow)
			}
			if tc.method == http.MethodHead {
				if len(body) != 0 {
					t.Errorf("HEAD returned a body: %q", body)
				}
				if resp.Header.Get("Content-Type") != "application/json" || resp.ContentLength <= 0 {
					t.Errorf("HEAD headers: %v", resp.Header)
				}
				return
			}
			checkErrorBody(t, resp.StatusCode, body)
		})
	}
}

func TestHealthz(t *testing.T) {
	h, st := newFakeHarness(t, 0)
	st.fail(io.ErrUnexpectedEOF) // a failing store does not make the process unhealthy
	rec := h.do(http.MethodGet, "/healthz", "")
	if rec.Code != http.StatusOK || rec.Body.String() != `{"status":"ok"}` {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
}

func TestRoutesSurviveQueryEncoding(t *testing.T) {
	h, _ := newFakeHarness(t, 0)
	base := h.listen()
	routes := []string{"K#s1", "a+b", "a b", "ключ#сессия", "a%23b", "a&me=b", "日本#😀", "", "\u2028"}
	for _, route := range routes {
		t.Run(route, func(t *testing.T) {
			h.send(route, jstr("to "+route))
			q := url.Values{"me": {route}, "timeout_ms": {"0"}}
			resp, err := http.Get(base + "/recv?" + q.Encode())
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			r := decodeReply(t, body)
			if r.Status != "message" || string(r.Envelope.Payload) != jstr("to "+route) {
				t.Fatalf("recv %q: %s", route, body)
			}
			if !strings.HasPrefix(r.Ack, route+"\x00") {
				t.Errorf("ack key %q does not start with the route", r.Ack)
			}
			ackBody := `{"me":` + jstr(route) + `,"ack":` + jstr(r.Ack) + `}`
			resp, err = http.Post(base+"/ack", "application/json", strings.NewReader(ackBody))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("ack: %d", resp.StatusCode)
			}
			if r := h.poll(route, 0); r.Status != "timeout" {
				t.Errorf("after ack: %+v", r)
			}
		})
	}
	// Form rules: a literal + in the query is a space.
	h.send("a b", `1`)
	if r := decodeReply(t, h.do(http.MethodGet, "/recv?me=a+b&timeout_ms=0", "").Body.Bytes()); r.Status != "message" {
		t.Errorf("me=a+b did not read route %q: %+v", "a b", r)
	}
}

// checkErrorBody requires the JSON error shape on every non-2xx status.
func checkErrorBody(tb testing.TB, code int, body []byte) {
	tb.Helper()
	if code/100 == 2 {
		return
	}
	var e errorBody
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil || e.Error == "" {
		tb.Errorf("status %d: body %q is not {\"error\":...}: %v", code, body, err)
	}
}
