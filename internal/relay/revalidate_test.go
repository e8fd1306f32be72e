package relay

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/testutil"
	"github.com/interlink-go/interlink/internal/wire"
)

// rosterTap records the /roster requests a bus gets and the body bytes
// and status of each answer.
type rosterTap struct {
	mu    sync.Mutex
	reqs  []*http.Request
	codes []int
	bytes []int
}

func (tp *rosterTap) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/roster" {
			next.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		next.ServeHTTP(rec, r)
		tp.mu.Lock()
		tp.reqs = append(tp.reqs, r.Clone(r.Context()))
		tp.codes = append(tp.codes, rec.Code)
		tp.bytes = append(tp.bytes, rec.Body.Len())
		tp.mu.Unlock()
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		_, _ = w.Write(rec.Body.Bytes())
	})
}

// last returns the last request, its status and body size.
func (tp *rosterTap) last(t *testing.T) (*http.Request, int, int) {
	t.Helper()
	tp.mu.Lock()
	defer tp.mu.Unlock()
	if len(tp.reqs) == 0 {
		t.Fatal("no /roster request")
	}
	n := len(tp.reqs) - 1
	return tp.reqs[n], tp.codes[n], tp.bytes[n]
}

// announceMany announces n sessions of distinct keys, numbered from 100,
// and returns their signers.
func announceMany(t *testing.T, c *Client, n int) []*identity.Signer {
	t.Helper()
	var out []*identity.Signer
	for i := range n {
		s := testutil.NumberedSigner(t, 100+i)
		if err := c.Announce(t.Context(), s.Announce(fmt.Sprint("n", i), session("s"), identity.Millis(testEpoch))); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

func TestFetchRosterRevalidatesTheKeptRoster(t *testing.T) {
	var tap rosterTap
	base, clk := startBusWith(t, tap.wrap)
	c := New(base, &Options{Now: clk.now})
	announceMany(t, c, 3)
	first := FetchRoster(t.Context(), []*Client{c})
	req, code, _ := tap.last(t)
	if code != http.StatusOK || req.Header.Get("If-None-Match") != "" || len(first.Entries) != 3 {
		t.Fatalf("first read: %d, If-None-Match %q, %d entries", code, req.Header.Get("If-None-Match"), len(first.Entries))
	}
	checked := c.kept.checked
	if checked == nil || len(checked.entries) != 3 {
		t.Fatalf("the kept roster's checked entries: %+v; want the three", checked)
	}
	clk.advance(7 * time.Second)
	again := FetchRoster(t.Context(), []*Client{c})
	req, code, n := tap.last(t)
	if code != http.StatusNotModified || n != 0 || !strings.HasPrefix(req.Header.Get("If-None-Match"), `W/"`) {
		t.Fatalf("second read: %d with %d bytes, If-None-Match %q; want 304 and no body", code, n, req.Header.Get("If-None-Match"))
	}
	if len(again.Entries) != 3 || again.Available != 1 {
		t.Fatalf("kept roster: %+v", again)
	}
	for i, e := range again.Entries {
		if e.Key != first.Entries[i].Key || e.AgeMS != first.Entries[i].AgeMS+7000 {
			t.Errorf("entry %d after 7 s: %+v, was %+v; want the same entry 7000 ms older", i, e, first.Entries[i])
		}
	}
	if c.kept.checked != checked {
		t.Error("a 304 checked the kept roster again; want the entries checked when it arrived")
	}
	// A change is read whole, and checked anew.
	announceMany(t, c, 4)
	changed := FetchRoster(t.Context(), []*Client{c})
	if _, code, _ := tap.last(t); code != http.StatusOK || len(changed.Entries) != 4 {
		t.Errorf("after a change: %d, %d entries", code, len(changed.Entries))
	}
	if c.kept.checked == checked || c.kept.checked == nil || len(c.kept.checked.entries) != 4 {
		t.Errorf("after a change the kept checks are %+v; want the four new entries", c.kept.checked)
	}
}

func TestFetchRosterReadsARelayWithoutTagsWhole(t *testing.T) {
	var mu sync.Mutex
	var asked []string
	s := testutil.Signer(t, 3)
	elem := announcementJSON(t, s.Announce("alpha", session("s1"), identity.Millis(testEpoch)))
	base := startFake(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		asked = append(asked, r.Header.Get("If-None-Match"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"roster":[` + elem + `]}`))
	})
	c := New(base, nil)
	for range 2 {
		if r := FetchRoster(t.Context(), []*Client{c}); len(r.Entries) != 1 {
			t.Fatalf("roster %+v", r)
		}
	}
	if len(asked) != 2 || asked[0] != "" || asked[1] != "" {
		t.Errorf("If-None-Match sent to a relay without tags: %q", asked)
	}
}

func TestFetchRosterOfAsksForTheKeysAlone(t *testing.T) {
	var tap rosterTap
	base, clk := startBusWith(t, tap.wrap)
	c := New(base, &Options{Now: clk.now})
	signers := announceMany(t, c, 20)
	peer := signers[7]
	if err := c.Announce(t.Context(), peer.Announce("n7", session("s2"), identity.Millis(testEpoch))); err != nil {
		t.Fatal(err)
	}
	r := FetchRosterOf(t.Context(), []*Client{c}, peer.Public())
	req, code, n := tap.last(t)
	if code != http.StatusOK || req.URL.RawQuery != "keys="+peer.Public().String() {
		t.Fatalf("lookup: %d, query %q", code, req.URL.RawQuery)
	}
	if len(r.Entries) != 2 || r.Entries[0].Key != peer.Public() || r.Entries[1].Key != peer.Public() {
		t.Fatalf("lookup entries: %+v", r.Entries)
	}
	full := FetchRoster(t.Context(), []*Client{c})
	_, _, fullBytes := tap.last(t)
	if len(full.Entries) != 21 || n*5 > fullBytes {
		t.Errorf("lookup answered %d bytes, the full roster of %d entries %d", n, len(full.Entries), fullBytes)
	}
}

func TestFetchRosterOfKeepsTheAskedKeysFromARelayThatIgnoresTheQuery(t *testing.T) {
	alpha, beta := testutil.Signer(t, 3), testutil.Signer(t, 4)
	body := `{"roster":[` + announcementJSON(t, alpha.Announce("alpha", session("a"), identity.Millis(testEpoch))) + `,` +
		announcementJSON(t, beta.Announce("beta", session("b"), identity.Millis(testEpoch))) + `]}`
	base := startFake(t, reply(http.StatusOK, body))
	r := FetchRosterOf(t.Context(), []*Client{New(base, nil)}, beta.Public())
	if len(r.Entries) != 1 || r.Entries[0].Key != beta.Public() || r.Available != 1 {
		t.Errorf("lookup from a relay that lists everything: %+v", r)
	}
	if _, err := New(base, nil).RosterOf(t.Context(), nil); err == nil {
		t.Error("a lookup of no keys was sent")
	}
}

// announcementJSON returns a as a roster element.
func announcementJSON(t *testing.T, a identity.Announcement) string {
	t.Helper()
	b, err := wire.AnnounceBody(a)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A 304 answers only a request that named a tag: from a relay never asked
// with one it is a failure, not an empty roster, and a relay's 304 only
// ever brings back what that same relay served.
func TestUnaskedNotModifiedIsAFailure(t *testing.T) {
	base := startFake(t, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNotModified) })
	r := FetchRoster(t.Context(), []*Client{New(base, nil)})
	if r.Available != 0 || len(r.Failures) != 1 || !strings.Contains(r.Failures[0], "304") {
		t.Errorf("roster from a relay that answers 304 unasked: %+v", r)
	}
	r = FetchRosterOf(t.Context(), []*Client{New(base, nil)}, testutil.Signer(t, 3).Public())
	if r.Available != 0 || len(r.Failures) != 1 {
		t.Errorf("lookup from a relay that answers 304: %+v", r)
	}
}

func TestNotModifiedBringsBackTheSameRelaysRoster(t *testing.T) {
	alpha, beta := testutil.Signer(t, 3), testutil.Signer(t, 4)
	serve := func(s *identity.Signer, name string) string {
		elem := announcementJSON(t, s.Announce(name, session("s"), identity.Millis(testEpoch)))
		return startFake(t, func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("If-None-Match") == `W/"same"` {
				w.WriteHeader(http.StatusNotModified)
				return
			}
			w.Header().Set("ETag", `W/"same"`)
			_, _ = w.Write([]byte(`{"roster":[` + elem + `]}`))
		})
	}
	a, b := New(serve(alpha, "alpha"), nil), New(serve(beta, "beta"), nil)
	for range 2 {
		r := FetchRoster(t.Context(), []*Client{a, b})
		if len(r.Entries) != 2 || r.Entries[0].Key != alpha.Public() || r.Entries[1].Key != beta.Public() {
			t.Fatalf("two relays with the same tag: %+v", r.Entries)
		}
	}
}
