package relay

import (
	"encoding/json"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/testutil"
)

func TestAnnounceRosterUnregister(t *testing.T) {
	base, clk := startBus(t)
	c := New(base, &Options{Now: clk.now})
	ctx := t.Context()
	s := testutil.Signer(t, 3)
	a := s.Announce("alpha", session("s1"), identity.Millis(testEpoch))
	if err := c.Announce(ctx, a); err != nil {
		t.Fatalf("Announce: %v", err)
	}
	clk.advance(1500 * time.Millisecond)

	elems, err := c.Roster(ctx)
	if err != nil || len(elems) != 1 {
		t.Fatalf("Roster = %d elements, %v; want 1", len(elems), err)
	}
	r := FetchRoster(ctx, []*Client{c})
	want := Roster{
		Entries:   []Entry{{Key: s.Public(), Name: "alpha", Session: session("s1"), AgeMS: 1500, Live: true}},
		Available: 1,
	}
	if diff := cmp.Diff(want, r); diff != "" {
		t.Errorf("FetchRoster (-want +got):\n%s", diff)
	}

	// Past the live window the session is away, not gone.
	clk.advance(LiveWindow)
	r = FetchRoster(ctx, []*Client{c})
	if len(r.Entries) != 1 || r.Entries[0].Live || r.Entries[0].AgeMS != 1500+90_000 {
		t.Errorf("entries after the live window = %+v, want one away entry", r.Entries)
	}

	if err := c.Unregister(ctx, a.PubKey, a.Session); err != nil {
		t.Fatalf("Unregister: %v", err)
	}
	r = FetchRoster(ctx, []*Client{c})
	if len(r.Entries) != 0 || r.Available != 1 || len(r.Failures) != 0 {
		t.Errorf("FetchRoster after Unregister = %+v, want an empty available roster", r)
	}
}

func TestRosterErrors(t *testing.T) {
	tests := []struct {
		name    string
		handler http.HandlerFunc
		want    string
	}{
		{name: "503", handler: reply(503, `{"error":"busy"}`), want: "503"},
		{name: "not JSON", handler: reply(200, `<html>hello</html>`), want: "invalid roster JSON"},
		{name: "truncated", handler: reply(200, `{"roster":[`), want: "invalid roster JSON"},
		{name: "roster not an array", handler: reply(200, `{"roster":5}`), want: "expected a roster array"},
		{name: "roster null", handler: reply(200, `{"roster":null}`), want: "expected a roster array"},
		{name: "no roster key", handler: reply(200, `{"status":"ok"}`), want: "expected a roster array"},
		{name: "top-level array", handler: reply(200, `[]`), want: "expected a roster array"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(startFake(t, tt.handler), nil).Roster(t.Context())
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Roster = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestRosterTransportFailure(t *testing.T) {
	_, err := New(closedURL(t), nil).Roster(t.Context())
	if err == nil || !strings.Contains(err.Error(), "roster request failed") {
		t.Errorf("Roster = %v, want a roster request failure", err)
	}
}

func TestFetchRosterFailures(t *testing.T) {
	base, _ := startBus(t)
	good := New(base, nil)
	s := testutil.Signer(t, 4)
	if err := good.Announce(t.Context(), s.Announce("good", session("g1"), 1)); err != nil {
		t.Fatal(err)
	}
	empty, _ := startBus(t)
	bad503 := startFake(t, reply(503, ""))
	html := startFake(t, reply(200, "<html>"))
	five := startFake(t, reply(200, `{"roster":5}`))
	down := closedURL(t)

	clients := []*Client{New(bad503, nil), good, New(html, nil), New(empty, nil), New(five, nil), New(down, nil)}
	r := FetchRoster(t.Context(), clients)
	if r.Available != 2 {
		t.Errorf("Available = %d, want 2", r.Available)
	}
	if len(r.Entries) != 1 || r.Entries[0].Name != "good" {
		t.Errorf("Entries = %+v, want the one good entry", r.Entries)
	}
	wants := []struct{ url, text string }{
		{bad503, "503"},
		{html, "invalid roster JSON"},
		{five, "expected a roster array"},
		{down, "roster request failed"},
	}
	if len(r.Failures) != len(wants) {
		t.Fatalf("Failures = %q, want %d", r.Failures, len(wants))
	}
	for i, w := range wants {
		if !strings.HasPrefix(r.Failures[i], w.url+": ") || !strings.Contains(r.Failures[i], w.text) {
			t.Errorf("Failures[%d] = %q, want %q: ...%s...", i, r.Failures[i], w.url, w.text)
		}
	}
}

// TestFetchRosterSkipsUnverified serves a roster holding forged and
// malformed elements next to good ones.
func TestFetchRosterSkipsUnverified(t *testing.T) {
	s, other := testutil.Signer(t, 5), testutil.Signer(t, 6)
	good := s.Announce("honest", session("h1"), 10)
	forged := s.Announce("honest", session("h2"), 10)
	forged.Name = "impostor" // no longer matches the signature
	stolen := other.Announce("thief", session("t1"), 10)
	stolen.PubKey = good.PubKey // signed by another key
	noAge := other.Announce("noage", session("n1"), 11)
	age := uint64(90_000)
	atWindow := s.Announce("honest", session("h3"), 12)
	atWindow.AgeMS = &age

	elems := []any{good, 5, "text", nil, forged, map[string]any{"pubkey": good.PubKey}, stolen, noAge, atWindow}
	var parts []string
	for _, e := range elems {
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, string(b))
	}
	base := startFake(t, reply(200, `{"roster":[`+strings.Join(parts, ",")+`]}`))
	r := FetchRoster(t.Context(), []*Client{New(base, nil)})
	want := Roster{
		Entries: []Entry{
			{Key: s.Public(), Name: "honest", Session: session("h1"), Live: true},
			{Key: other.Public(), Name: "noage", Session: session("n1"), Live: true},
			{Key: s.Public(), Name: "honest", Session: session("h3"), AgeMS: 90_000, Live: false},
		},
		Available: 1,
	}
	if diff := cmp.Diff(want, r); diff != "" {
		t.Errorf("FetchRoster (-want +got):\n%s", diff)
	}
}

// TestFetchRosterDedupe announces the same session on two buses; the first
// relay's copy wins.
func TestFetchRosterDedupe(t *testing.T) {
	base1, clk1 := startBus(t)
	base2, clk2 := startBus(t)
	c1, c2 := New(base1, nil), New(base2, nil)
	ctx := t.Context()
	s, other := testutil.Signer(t, 7), testutil.Signer(t, 8)
	shared := s.Announce("shared", session("s1"), 1)
	for _, c := range []*Client{c1, c2} {
		if err := c.Announce(ctx, shared); err != nil {
			t.Fatal(err)
		}
	}
	if err := c2.Announce(ctx, other.Announce("only2", session("o1"), 1)); err != nil {
		t.Fatal(err)
	}
	clk1.advance(time.Second)
	clk2.advance(2 * time.Second)

	r := FetchRoster(ctx, []*Client{c1, c2})
	want := []Entry{
		{Key: s.Public(), Name: "shared", Session: session("s1"), AgeMS: 1000, Live: true},
		{Key: other.Public(), Name: "only2", Session: session("o1"), AgeMS: 2000, Live: true},
	}
	if diff := cmp.Diff(want, r.Entries); diff != "" {
		t.Errorf("entries (-want +got):\n%s", diff)
	}
	if r.Available != 2 || len(r.Failures) != 0 {
		t.Errorf("Available = %d, Failures = %q", r.Available, r.Failures)
	}
}

func TestGroups(t *testing.T) {
	a, b, c := testutil.Signer(t, 9).Public(), testutil.Signer(t, 10).Public(), testutil.Signer(t, 11).Public()
	entry := func(k identity.PublicKey, name, sid string) Entry {
		return Entry{Key: k, Name: name, Session: session(sid), Live: true}
	}
	bare := func(k identity.PublicKey, name string) Entry {
		return Entry{Key: k, Name: name, Live: true}
	}
	r := Roster{Entries: []Entry{
		entry(a, "a-first", "s1"),
		bare(b, "b-bare"),
		entry(a, "a-later", "s2"),
		entry(b, "b-session", "t1"),
		bare(c, "c-only"),
	}}
	want := []Group{
		{Key: a, Name: "a-first", Sessions: []Entry{entry(a, "a-first", "s1"), entry(a, "a-later", "s2")}},
		{Key: b, Name: "b-bare", Sessions: []Entry{entry(b, "b-session", "t1")}},
		{Key: c, Name: "c-only"},
	}
	if diff := cmp.Diff(want, r.Groups()); diff != "" {
		t.Errorf("Groups (-want +got):\n%s", diff)
	}
	if g := (Roster{}).Groups(); len(g) != 0 {
		t.Errorf("Groups of an empty roster = %+v", g)
	}
}

// TestFetchRosterBareAnnouncement checks that an announcement without a
// session counts toward the identity but not as a session.
func TestFetchRosterBareAnnouncement(t *testing.T) {
	base, _ := startBus(t)
	c := New(base, nil)
	s := testutil.Signer(t, 12)
	for _, a := range []identity.Announcement{
		s.Announce("bare", identity.SessionInfo{}, 1),
		s.Announce("with-session", session("w1"), 2),
	} {
		if err := c.Announce(t.Context(), a); err != nil {
			t.Fatal(err)
		}
	}
	groups := FetchRoster(t.Context(), []*Client{c}).Groups()
	if len(groups) != 1 || len(groups[0].Sessions) != 1 || groups[0].Sessions[0].Session.SessionID != "w1" {
		t.Errorf("Groups = %+v, want one identity with session w1", groups)
	}
}

func TestRosterEmptyClients(t *testing.T) {
	r := FetchRoster(t.Context(), nil)
	if r.Available != 0 || r.Entries != nil || r.Failures != nil {
		t.Errorf("FetchRoster(nil) = %+v", r)
	}
}

// A roster stuffed with junk of every kind still yields every entry that
// verifies: elements of the wrong type, fields of the wrong type, nesting
// deeper than a JSON decoder accepts, numbers too large for any type,
// invalid UTF-8, bad signatures and unknown members.
func TestFetchRosterUsesEveryEntryThatVerifies(t *testing.T) {
	alice, bob := testutil.Signer(t, 7), testutil.Signer(t, 8)
	good1 := marshal(t, alice.Announce("alice", session("a1"), 10))
	good2 := marshal(t, bob.Announce("bob", session("b1"), 11))
	forged := bob.Announce("bob", session("b2"), 11)
	forged.Sig = alice.Announce("bob", session("b2"), 11).Sig
	deep := strings.Repeat("[", 20000) + strings.Repeat("]", 20000)
	deepInside := `{"pubkey":"` + alice.Public().String() + `","name":"x","ts":1,"sig":"","junk":` + deep + `}`
	junk := []string{
		deep, deepInside, "5", `"text"`, "null", "true", "1e400", "[]", "{}",
		`{"pubkey":5,"name":"x","ts":1,"sig":""}`,
		`{"pubkey":"` + bob.Public().String() + `","name":["x"],"ts":1,"sig":""}`,
		`{"pubkey":"` + bob.Public().String() + `","name":"x","ts":-1,"sig":""}`,
		`{"pubkey":"` + bob.Public().String() + `","name":"x","ts":1e999,"sig":""}`,
		"{\"pubkey\":\"\xff\xfe\",\"name\":\"x\",\"ts\":1,\"sig\":\"\"}",
		marshal(t, forged),
		`{"session":{"session_id":{"nested":[1,2,3]}}}`,
	}
	parts := []string{junk[0], good1}
	parts = append(parts, junk[1:8]...)
	parts = append(parts, good2)
	parts = append(parts, junk[8:]...)
	body := `{"version":` + deep + `,"roster":[` + strings.Join(parts, ",") + `],"extra":{"x":"]"}}`
	if json.Valid([]byte(body)) {
		t.Fatal("the test roster was meant to be deeper than encoding/json accepts")
	}
	r := FetchRoster(t.Context(), []*Client{New(startFake(t, reply(200, body)), nil)})
	if len(r.Failures) != 0 || r.Available != 1 {
		t.Fatalf("roster failed: %q", r.Failures)
	}
	var names []string
	for _, e := range r.Entries {
		names = append(names, e.Name+"@"+e.Key.Fingerprint())
	}
	want := []string{"alice@" + alice.Public().Fingerprint(), "bob@" + bob.Public().Fingerprint()}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("entries (-want +got):\n%s", diff)
	}
}

func marshal(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A roster large enough to be checked in shares on several processors
// keeps the relay's order, and skips and counts the same elements as one
// checked element after element.
func TestCheckElemsInSharesKeepsTheRostersOrder(t *testing.T) {
	s := testutil.Signer(t, 9)
	var elems []json.RawMessage
	for i := range 3*checkShare + 17 {
		a := s.Announce(fmt.Sprint("n", i), session(fmt.Sprint("s", i)), 10)
		switch i % 7 {
		case 3:
			a.Name = "forged" // no longer matches the signature
		case 5:
			elems = append(elems, json.RawMessage(`"not an announcement"`))
			continue
		}
		elems = append(elems, json.RawMessage(marshal(t, a)))
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	got := checkElems(elems)
	want := checkShareOf(elems)
	if got.undecodable != want.undecodable || got.badSig != want.badSig || got.undecodable == 0 || got.badSig == 0 {
		t.Errorf("skipped %d undecodable and %d forged, want %d and %d", got.undecodable, got.badSig, want.undecodable, want.badSig)
	}
	if len(got.entries) != len(want.entries) {
		t.Fatalf("%d entries, want %d", len(got.entries), len(want.entries))
	}
	for i := range got.entries {
		if got.entries[i].ann.Name != want.entries[i].ann.Name || got.entries[i].ann.Session.SessionID != want.entries[i].ann.Session.SessionID {
			t.Fatalf("entry %d: %s of %s, want %s of %s", i, got.entries[i].ann.Name, got.entries[i].ann.Session.SessionID,
				want.entries[i].ann.Name, want.entries[i].ann.Session.SessionID)
		}
	}
}
