package bus_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/interlink-go/interlink/internal/bus"
	"github.com/interlink-go/interlink/internal/bus/bustest"
	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/reqsign"
	"github.com/interlink-go/interlink/internal/testutil"
	"github.com/interlink-go/interlink/internal/wire"
)

var digits = regexp.MustCompile(`[0-9]+`)

// rawReq is one request to a bus, built from the spec's body formats with
// raw HTTP, signed by signer when it is not nil.
type rawReq struct {
	method, path string
	body         string
	signer       *identity.Signer
	at           time.Time // signing time; zero means now
	tamper       func(*http.Request)
}

type rawAnswer struct {
	code   int
	body   string
	header http.Header
}

func (rq rawReq) build(t *testing.T, base string) *http.Request {
	t.Helper()
	var rd io.Reader
	if rq.body != "" {
		rd = strings.NewReader(rq.body)
	}
	req, err := http.NewRequestWithContext(t.Context(), rq.method, base+rq.path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if rq.method == http.MethodPost {
		req.Header.Set("Content-Type", "application/json")
	}
	if rq.signer != nil {
		at := rq.at
		if at.IsZero() {
			at = time.Now()
		}
		var body []byte
		if rq.body != "" {
			body = []byte(rq.body)
		}
		if err := reqsign.Sign(req, body, rq.signer, at); err != nil {
			t.Fatal(err)
		}
	}
	if rq.tamper != nil {
		rq.tamper(req)
	}
	return req
}

func (rq rawReq) do(t *testing.T, base string) rawAnswer {
	t.Helper()
	return doReq(t, rq.build(t, base))
}

func doReq(t *testing.T, req *http.Request) rawAnswer {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return rawAnswer{code: resp.StatusCode, body: string(b), header: resp.Header}
}

// message returns the payload of a message from signer to route, signed
// as agents sign them.
func message(t *testing.T, from *identity.Signer, to, text string) string {
	t.Helper()
	m := identity.Message{From: from.Public().String(), To: strings.SplitN(to, "#", 2)[0], Text: text,
		TS: uint64(time.Now().UnixMilli()), MsgID: strings.Repeat("ab", 16), Kind: identity.KindMessage}
	if err := from.SignMessage(&m); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func sendBody(t *testing.T, to, payload string) string {
	t.Helper()
	b, err := wire.SendBody(to, []byte(payload))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func recvPath(route string) string {
	return "/recv?me=" + url.QueryEscape(route) + "&timeout_ms=0"
}

func ackBody(route, key string) string { return string(wire.AppendAck(nil, route, key)) }

func announceBody(t *testing.T, a identity.Announcement) string {
	t.Helper()
	b, err := wire.AnnounceBody(a)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// wantUnauthorized checks a 401 answer: the JSON error shape, the
// scheme it asks for, and a reason naming what is wrong.
func wantUnauthorized(t *testing.T, what string, got rawAnswer, reason string) {
	t.Helper()
	if got.code != http.StatusUnauthorized {
		t.Errorf("%s: status %d %s, want 401", what, got.code, got.body)
		return
	}
	var e struct {
		Error string `json:"error"`
	}
	if err := json.Unmarshal([]byte(got.body), &e); err != nil || e.Error == "" {
		t.Errorf("%s: body %q is not a JSON error", what, got.body)
	}
	if !strings.Contains(e.Error, reason) {
		t.Errorf("%s: error %q does not say %q", what, e.Error, reason)
	}
	if got.header.Get(wire.AuthenticateHeader) != wire.AuthScheme {
		t.Errorf("%s: %s = %q", what, wire.AuthenticateHeader, got.header.Get(wire.AuthenticateHeader))
	}
}

// With --auth required, every request that reads, acknowledges or
// unregisters a route, or announces or sends, is refused unless signed
// by the key it acts for; the refusal is the same for a route holding
// messages and for one that holds none, and the queue is untouched. The
// owner then reads and acknowledges as before.
func TestAuthRequiredRefusesAllButTheOwnerAndLeaksNothing(t *testing.T) {
	base := bustest.Start(t, &bustest.Options{Auth: bus.AuthRequired})
	owner, stranger := testutil.Signer(t, 1), testutil.Signer(t, 2)
	full := owner.Public().String() + "#s1"
	empty := owner.Public().String() + "#s2"

	if got := (rawReq{method: "POST", path: "/send", body: sendBody(t, full, message(t, stranger, full, "for the owner")), signer: stranger}).do(t, base); got.code != http.StatusAccepted {
		t.Fatalf("signed send: %d %s", got.code, got.body)
	}
	fakeKey := full + "\x0000000000000000000001"
	ann := owner.Announce("owner", identity.SessionInfo{SessionID: "s1", Cwd: "/secret/work"}, uint64(time.Now().UnixMilli()))
	forged := ann
	forged.Session.Cwd = "/elsewhere" // the signature no longer covers it
	sinceTime := time.Now().Add(-10 * time.Minute)

	refused := []struct {
		name   string
		req    func(route string) rawReq
		reason string
	}{
		{"unsigned recv", func(rt string) rawReq { return rawReq{method: "GET", path: recvPath(rt)} }, "requires signed requests"},
		{"unsigned ack", func(rt string) rawReq {
			return rawReq{method: "POST", path: "/ack", body: ackBody(rt, rt+"\x0000000000000000000001")}
		}, "requires signed requests"},
		{"unsigned unregister", func(rt string) rawReq {
			return rawReq{method: "POST", path: "/unregister", body: `{"pubkey":"` + owner.Public().String() + `","session":{"session_id":"` + strings.SplitN(rt, "#", 2)[1] + `"}}`}
		}, "requires signed requests"},
		{"unsigned send", func(rt string) rawReq {
			return rawReq{method: "POST", path: "/send", body: sendBody(t, rt, message(t, stranger, rt, "x"))}
		}, "requires signed requests"},
		{"recv signed by a stranger", func(rt string) rawReq { return rawReq{method: "GET", path: recvPath(rt), signer: stranger} }, "not the key of the route"},
		{"ack signed by a stranger", func(rt string) rawReq {
			return rawReq{method: "POST", path: "/ack", body: ackBody(rt, fakeKey), signer: stranger}
		}, "not the key of the route"},
		{"unregister signed by a stranger", func(rt string) rawReq {
			return rawReq{method: "POST", path: "/unregister", body: `{"pubkey":"` + owner.Public().String() + `","session":{"session_id":"s1"}}`, signer: stranger}
		}, "not the pubkey"},
		{"owner's announcement posted by a stranger", func(string) rawReq {
			return rawReq{method: "POST", path: "/announce", body: announceBody(t, ann), signer: stranger}
		}, "not the pubkey"},
		{"forged announcement", func(string) rawReq {
			return rawReq{method: "POST", path: "/announce", body: announceBody(t, forged), signer: owner}
		}, "announcement's own signature"},
		{"send in another's name", func(rt string) rawReq {
			return rawReq{method: "POST", path: "/send", body: sendBody(t, rt, message(t, owner, rt, "x")), signer: stranger}
		}, "not the sender"},
		{"signature over another body", func(rt string) rawReq {
			r := rawReq{method: "GET", path: recvPath(rt), signer: owner}
			r.tamper = func(req *http.Request) { req.URL.RawQuery = "me=" + url.QueryEscape(rt) + "&timeout_ms=1" }
			return r
		}, "does not verify"},
		{"stale signature", func(rt string) rawReq { return rawReq{method: "GET", path: recvPath(rt), signer: owner, at: sinceTime} }, "too long ago"},
		{"half the headers", func(rt string) rawReq {
			r := rawReq{method: "GET", path: recvPath(rt), signer: owner}
			r.tamper = func(req *http.Request) { req.Header.Del(reqsign.HeaderNonce) }
			return r
		}, "Interlink-Nonce is missing"},
	}
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			a, b := tt.req(full).do(t, base), tt.req(empty).do(t, base)
			wantUnauthorized(t, tt.name, a, tt.reason)
			// Times in the text differ by the milliseconds between
			// the two requests; nothing else may.
			if a.code != b.code || digits.ReplaceAllString(a.body, "N") != digits.ReplaceAllString(b.body, "N") {
				t.Errorf("a route with a message answers %d %q, an empty one %d %q", a.code, a.body, b.code, b.body)
			}
		})
	}

	// A signed request seen already is refused, even from the owner.
	first := (rawReq{method: "GET", path: recvPath(empty), signer: owner}).build(t, base)
	again := first.Clone(t.Context())
	if got := doReq(t, first); got.code != http.StatusOK {
		t.Fatalf("owner's poll: %d %s", got.code, got.body)
	}
	wantUnauthorized(t, "replayed poll", doReq(t, again), "seen already")

	// The message is still there, for its owner alone.
	got := (rawReq{method: "GET", path: recvPath(full), signer: owner}).do(t, base)
	ans, err := wire.DecodeRecvAnswer([]byte(got.body))
	if err != nil || ans.Status != "message" || !strings.Contains(string(ans.Payload), "for the owner") {
		t.Fatalf("owner's poll after the refusals: %d %s", got.code, got.body)
	}
	if got := (rawReq{method: "POST", path: "/ack", body: ackBody(full, ans.Ack), signer: owner}).do(t, base); got.code != http.StatusOK {
		t.Fatalf("owner's ack: %d %s", got.code, got.body)
	}
	got = (rawReq{method: "GET", path: recvPath(full), signer: owner}).do(t, base)
	if got.body != wire.TimeoutAnswer {
		t.Errorf("after the owner's ack: %s", got.body)
	}
	// The owner's own announcement is taken, and the roster stays open.
	if got := (rawReq{method: "POST", path: "/announce", body: announceBody(t, ann), signer: owner}).do(t, base); got.code != http.StatusAccepted {
		t.Errorf("owner's announcement: %d %s", got.code, got.body)
	}
	// An announcement without the privacy extension is listed for its
	// own key alone.
	roster := (rawReq{method: "GET", path: "/roster", signer: owner}).do(t, base)
	if roster.code != http.StatusOK || !strings.Contains(roster.body, owner.Public().String()) {
		t.Errorf("owner's roster: %d %s", roster.code, roster.body)
	}
	if got := (rawReq{method: "POST", path: "/unregister", body: `{"pubkey":"` + owner.Public().String() + `","session":{"session_id":"s1"}}`, signer: owner}).do(t, base); got.code != http.StatusAccepted {
		t.Errorf("owner's unregister: %d %s", got.code, got.body)
	}
	if roster := (rawReq{method: "GET", path: "/roster", signer: owner}).do(t, base); strings.Contains(roster.body, owner.Public().String()) {
		t.Errorf("roster after the owner's unregister: %s", roster.body)
	}
}

// On the default bus, a client that signs nothing (the original's) is
// served as before, while a signature that is present must be right.
func TestAuthOptionalServesUnsignedAndRefusesBadSignatures(t *testing.T) {
	base := bustest.Start(t, nil)
	a, b := testutil.Signer(t, 1), testutil.Signer(t, 2)
	rt := a.Public().String() + "#s1"
	if got := (rawReq{method: "POST", path: "/send", body: sendBody(t, rt, message(t, b, rt, "hello"))}).do(t, base); got.code != http.StatusAccepted || got.body != "" {
		t.Fatalf("unsigned send: %d %q", got.code, got.body)
	}
	got := (rawReq{method: "GET", path: recvPath(rt)}).do(t, base)
	ans, err := wire.DecodeRecvAnswer([]byte(got.body))
	if err != nil || ans.Status != "message" {
		t.Fatalf("unsigned recv: %d %s", got.code, got.body)
	}
	wantUnauthorized(t, "poll signed by another key", (rawReq{method: "GET", path: recvPath(rt), signer: b}).do(t, base), "not the key of the route")
	bad := rawReq{method: "POST", path: "/ack", body: ackBody(rt, ans.Ack), signer: a}
	bad.tamper = func(req *http.Request) {
		req.Body = io.NopCloser(bytes.NewReader([]byte(ackBody(rt, rt+"\x0000000000000000000009"))))
		req.ContentLength = int64(len(ackBody(rt, rt+"\x0000000000000000000009")))
	}
	wantUnauthorized(t, "ack whose body is not the one signed", bad.do(t, base), "does not verify")
	if got := (rawReq{method: "POST", path: "/ack", body: ackBody(rt, ans.Ack)}).do(t, base); got.code != http.StatusOK || got.body != "" {
		t.Fatalf("unsigned ack: %d %q", got.code, got.body)
	}
	if got := (rawReq{method: "GET", path: recvPath(rt)}).do(t, base); got.body != wire.TimeoutAnswer {
		t.Errorf("after the ack: %s", got.body)
	}
}

// With --auth required, an announcement that is unsigned, forged or
// signed by a key other than its own, and an ack or unregister whose
// signature does not cover the body sent, are refused alike for a
// session that is listed and holds a message and for one that is neither;
// the listing keeps what its owner announced and the queue its message.
func TestAuthRequiredRefusalsTellAListedSessionFromNoOther(t *testing.T) {
	base := bustest.Start(t, &bustest.Options{Auth: bus.AuthRequired})
	owner, stranger := testutil.Signer(t, 3), testutil.Signer(t, 4)
	key := owner.Public().String()
	listed, unlisted := key+"#s1", key+"#s2"
	now := uint64(time.Now().UnixMilli())
	announcement := func(session string) identity.Announcement {
		return owner.Announce("owner", identity.SessionInfo{SessionID: session, Cwd: "/the/real/work"}, now)
	}
	if got := (rawReq{method: "POST", path: "/announce", body: announceBody(t, announcement("s1")), signer: owner}).do(t, base); got.code != http.StatusAccepted {
		t.Fatalf("owner's announcement: %d %s", got.code, got.body)
	}
	if got := (rawReq{method: "POST", path: "/send", body: sendBody(t, listed, message(t, stranger, listed, "kept for the owner")), signer: stranger}).do(t, base); got.code != http.StatusAccepted {
		t.Fatalf("signed send: %d %s", got.code, got.body)
	}
	session := func(rt string) string { return strings.SplitN(rt, "#", 2)[1] }
	unregisterBody := func(rt string) string {
		return `{"pubkey":"` + key + `","session":{"session_id":"` + session(rt) + `"}}`
	}
	// otherBody swaps the body after signing for one that differs in
	// the first letter of the session: same length, same shape.
	otherBody := func(body, before string) func(*http.Request) {
		return func(req *http.Request) {
			b := strings.Replace(body, before+"s", before+"t", 1)
			if b == body {
				t.Fatalf("no %q in %s", before, body)
			}
			req.Body, req.ContentLength = io.NopCloser(strings.NewReader(b)), int64(len(b))
		}
	}
	refused := []struct {
		name   string
		req    func(rt string) rawReq
		reason string
	}{
		{"unsigned announcement", func(rt string) rawReq {
			return rawReq{method: "POST", path: "/announce", body: announceBody(t, announcement(session(rt)))}
		}, "requires signed requests"},
		{"unsigned forged announcement", func(rt string) rawReq {
			a := announcement(session(rt))
			a.Session.Cwd = "/a/trap"
			return rawReq{method: "POST", path: "/announce", body: announceBody(t, a)}
		}, "requires signed requests"},
		{"forged announcement signed by the stranger", func(rt string) rawReq {
			a := announcement(session(rt))
			a.Name = "owner, but moved"
			return rawReq{method: "POST", path: "/announce", body: announceBody(t, a), signer: stranger}
		}, "not the pubkey"},
		{"ack whose body is not the one signed", func(rt string) rawReq {
			body := ackBody(rt, rt+"\x0000000000000000000001")
			return rawReq{method: "POST", path: "/ack", body: body, signer: owner, tamper: otherBody(body, "#")}
		}, "does not verify"},
		{"unregister whose body is not the one signed", func(rt string) rawReq {
			body := unregisterBody(rt)
			return rawReq{method: "POST", path: "/unregister", body: body, signer: owner, tamper: otherBody(body, `"session_id":"`)}
		}, "does not verify"},
		{"unregister signed by the stranger", func(rt string) rawReq {
			return rawReq{method: "POST", path: "/unregister", body: unregisterBody(rt), signer: stranger}
		}, "not the pubkey"},
		{"unsigned unregister", func(rt string) rawReq {
			return rawReq{method: "POST", path: "/unregister", body: unregisterBody(rt)}
		}, "requires signed requests"},
	}
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			a, b := tt.req(listed).do(t, base), tt.req(unlisted).do(t, base)
			wantUnauthorized(t, tt.name, a, tt.reason)
			if a.code != b.code || digits.ReplaceAllString(a.body, "N") != digits.ReplaceAllString(b.body, "N") {
				t.Errorf("a listed session answers %d %q, an unlisted one %d %q", a.code, a.body, b.code, b.body)
			}
		})
	}

	// On this bus an entry's details are listed for its own key only.
	roster := (rawReq{method: "GET", path: "/roster", signer: owner}).do(t, base)
	for _, s := range []string{`"session_id":"s1"`, "/the/real/work"} {
		if !strings.Contains(roster.body, s) {
			t.Errorf("the roster lost %s: %s", s, roster.body)
		}
	}
	for _, s := range []string{`"session_id":"s2"`, "/a/trap", "moved"} {
		if strings.Contains(roster.body, s) {
			t.Errorf("the roster took %s: %s", s, roster.body)
		}
	}
	got := (rawReq{method: "GET", path: recvPath(listed), signer: owner}).do(t, base)
	ans, err := wire.DecodeRecvAnswer([]byte(got.body))
	if err != nil || ans.Status != "message" || !strings.Contains(string(ans.Payload), "kept for the owner") {
		t.Errorf("owner's poll after the refusals: %d %s", got.code, got.body)
	}
}
