package bus

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/interlink-go/interlink/internal/wire"
)

// rosterOf fetches /roster and returns its elements.
func (h *harness) rosterOf() []map[string]any {
	h.tb.Helper()
	rec := h.do(http.MethodGet, "/roster", "")
	if rec.Code != http.StatusOK {
		h.tb.Fatalf("roster: %d %s", rec.Code, rec.Body)
	}
	var out struct {
		Roster []map[string]any `json:"roster"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil || out.Roster == nil {
		h.tb.Fatalf("roster body %s: %v", rec.Body, err)
	}
	return out.Roster
}

// announce posts body to /announce and requires 202.
func (h *harness) announce(body string) {
	h.tb.Helper()
	if rec := h.do(http.MethodPost, "/announce", body); rec.Code != http.StatusAccepted || rec.Body.Len() != 0 {
		h.tb.Fatalf("announce %s: %d %s", body, rec.Code, rec.Body)
	}
}

// sampleAnnouncement is what current clients send, plus a field no client
// sends yet.
const sampleAnnouncement = `{"pubkey":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo","name":"desk",` +
	`"session":{"session_id":"0b7d1f3e-2c4a-4f5e-9d6b-8a1c2e3f4a5b","cwd":"/home/me/src","git_root":"/home/me/src",` +
	`"summary":"<fixing> & \"testing\"","title":"new field"},` +
	`"ts":1700000000000,"sig":"c2lnbmF0dXJl","future":{"x":[1,2.50,{"y":null}]}}`

func TestAnnouncementIsListedVerbatim(t *testing.T) {
	h, _ := newFakeHarness(t, 0)
	if rec := h.do(http.MethodGet, "/roster", ""); rec.Body.String() != `{"roster":[]}` {
		t.Errorf("empty roster: %s", rec.Body)
	}
	h.announce(sampleAnnouncement)
	raw := h.do(http.MethodGet, "/roster", "").Body.Bytes()
	var got struct{ Roster []json.RawMessage }
	if err := json.Unmarshal(raw, &got); err != nil || len(got.Roster) != 1 {
		t.Fatalf("roster %s: %v", raw, err)
	}
	want := decodeAny(t, []byte(sampleAnnouncement)).(map[string]any)
	want["age_ms"] = json.Number("0")
	if diff := cmp.Diff(want, decodeAny(t, got.Roster[0])); diff != "" {
		t.Errorf("roster element (-want +got):\n%s", diff)
	}
	// Numbers keep their text and strings are not HTML-escaped.
	for _, s := range []string{`2.50`, `"<fixing> & \"testing\""`} {
		if !strings.Contains(string(raw), s) {
			t.Errorf("roster output lacks %s: %s", s, raw)
		}
	}
}

func TestRosterStampsTheAge(t *testing.T) {
	h, _ := newFakeHarness(t, 0)
	h.announce(`{"pubkey":"k","age_ms":999999,"age":"kept"}`)
	h.clock.Add(1234 * time.Millisecond)
	got := h.rosterOf()
	if len(got) != 1 || got[0]["age_ms"] != 1234.0 || got[0]["age"] != "kept" {
		t.Fatalf("roster = %v, want age_ms 1234", got)
	}
	// A clock that goes back makes ages saturate at 0.
	h.clock.Add(-time.Hour)
	if got := h.rosterOf(); got[0]["age_ms"] != 0.0 {
		t.Errorf("age after the clock went back: %v", got[0]["age_ms"])
	}
}

func TestAnnouncementRefreshesItsEntry(t *testing.T) {
	h, _ := newFakeHarness(t, 0)
	h.announce(`{"pubkey":"k","name":"old"}`)
	h.clock.Add(time.Second)
	h.announce(`{"pubkey":"k","name":"new"}`)
	got := h.rosterOf()
	if len(got) != 1 || got[0]["name"] != "new" || got[0]["age_ms"] != 0.0 {
		t.Errorf("roster = %v, want one refreshed entry", got)
	}
}

func TestRosterEntriesAreKeyedByKeyAndSession(t *testing.T) {
	cases := []struct {
		body, key string
	}{
		{`{"pubkey":"k","session":{"session_id":"s1"}}`, "k#s1"},
		{`{"pubkey":"k","session":{"session_id":"s2","cwd":"/"}}`, "k#s2"},
		{`{"pubkey":"k"}`, "k"},
		{`{"pubkey":"k","session":null}`, "k"},
		{`{"pubkey":"k","session":"s1"}`, "k"},
		{`{"pubkey":"k","session":["s1"]}`, "k"},
		{`{"pubkey":"k","session":{}}`, "k"},
		{`{"pubkey":"k","session":{"session_id":""}}`, "k"},
		{`{"pubkey":"k","session":{"session_id":7}}`, "k"},
		{`{"pubkey":"k","session":{"session_id":null}}`, "k"},
		{`{"pubkey":"","session":{"session_id":"s"}}`, "#s"},
		{`{"pubkey":"k","session":{"session_id":"a#b"}}`, "k#a#b"},
		{`{"pubkey":"k","session_id":"top-level is not a session"}`, "k"},
	}
	for _, tc := range cases {
		a, err := wire.DecodeAnnounce([]byte(tc.body))
		if err != nil || a.Key != tc.key {
			t.Errorf("%s: key %q (%v), want %q", tc.body, a.Key, err, tc.key)
		}
	}
	h, _ := newFakeHarness(t, 0)
	for _, tc := range cases[:10] {
		h.announce(tc.body)
	}
	if got := h.rosterOf(); len(got) != 3 {
		t.Errorf("roster has %d entries, want k#s1, k#s2 and k", len(got))
	}
}

func TestBadAnnouncementsAreRefused(t *testing.T) {
	bodies := []string{
		`[]`, `[{"pubkey":"k"}]`, `3`, `"k"`, `null`, `true`,
		`{}`, `{"name":"x"}`, `{"pubkey":1}`, `{"pubkey":null}`, `{"pubkey":["k"]}`, `{"pubkey":{"k":1}}`,
		`{"Pubkey":"k"}`,
	}
	for _, path := range []string{"/announce", "/unregister"} {
		for _, body := range bodies {
			h, _ := newFakeHarness(t, 0)
			rec := h.do(http.MethodPost, path, body)
			if rec.Code != http.StatusBadRequest {
				t.Errorf("%s %s: %d, want 400", path, body, rec.Code)
			}
			checkErrorBody(t, rec.Code, rec.Body.Bytes())
		}
	}
}

func TestRosterForgetsAnEntryAfterThreeDays(t *testing.T) {
	h, _ := newFakeHarness(t, 0)
	h.announce(`{"pubkey":"old"}`)
	h.clock.Add(259_199_999 * time.Millisecond)
	if got := h.rosterOf(); len(got) != 1 || got[0]["age_ms"] != 259_199_999.0 {
		t.Fatalf("at 259,199,999 ms: %v", got)
	}
	h.clock.Add(time.Millisecond)
	if got := h.rosterOf(); len(got) != 0 {
		t.Fatalf("at 259,200,000 ms: %v, want nothing", got)
	}
	if n := h.srv.roster.Len(); n != 1 {
		t.Fatalf("the expired entry is hidden, not deleted: %d entries", n)
	}
	h.announce(`{"pubkey":"new"}`)
	if n := h.srv.roster.Len(); n != 1 {
		t.Errorf("after an announce the expired entry is pruned: %d entries", n)
	}
}

// fillRoster announces n keys "k0".."k(n-1)".
func fillRoster(h *harness, n int) {
	for i := range n {
		h.announce(`{"pubkey":"k` + strconv.Itoa(i) + `"}`)
	}
}

// TestFullRosterAdmitsNewcomers: with the roster full, a newcomer takes
// the place of the entry refreshed longest ago, refreshing an existing key
// evicts nobody, and entries that expire or unregister make room too.
func TestFullRosterAdmitsNewcomers(t *testing.T) {
	h, _ := newFakeHarness(t, 0)
	fillRoster(h, RosterCap) // k0 is the longest ago, k4095 the latest
	h.clock.Add(time.Second)
	h.announce(`{"pubkey":"k0","name":"refreshed"}`)
	if got := findKey(h.rosterOf(), "k0"); got == nil || got["name"] != "refreshed" || got["age_ms"] != 0.0 {
		t.Fatalf("refresh in a full roster: %v", got)
	}
	if n := h.srv.roster.Len(); n != RosterCap {
		t.Fatalf("a refresh changed the size to %d", n)
	}
	h.announce(`{"pubkey":"newcomer"}`)
	got := h.rosterOf()
	if len(got) != RosterCap || !containsKey(got, "newcomer") {
		t.Fatalf("newcomer listed %v among %d entries, want listed among %d", containsKey(got, "newcomer"), len(got), RosterCap)
	}
	// k0 was refreshed, so k1 was the entry refreshed longest ago.
	if containsKey(got, "k1") || !containsKey(got, "k0") || !containsKey(got, "k2") {
		t.Fatalf("evicted the wrong entry: k0 %v, k1 %v, k2 %v", containsKey(got, "k0"), containsKey(got, "k1"), containsKey(got, "k2"))
	}
	if recs := h.logs.find("roster full; entries refreshed longest ago gave way"); len(recs) != 1 || recs[0]["evicted"] != int64(1) {
		t.Errorf("eviction log: %v", recs)
	}
	if code := h.post("/unregister", `{"pubkey":"k2"}`); code != http.StatusAccepted {
		t.Fatalf("unregister: %d", code)
	}
	h.announce(`{"pubkey":"second"}`)
	if got := h.rosterOf(); !containsKey(got, "second") || !containsKey(got, "k3") {
		t.Fatal("after an unregister a newcomer should take the free place, not evict")
	}
	// Everything announced before the second step expires.
	h.clock.Add(RosterRetention - time.Second)
	h.announce(`{"pubkey":"later"}`)
	if got := h.rosterOf(); len(got) != 4 || !containsKey(got, "later") {
		t.Errorf("after expiry: %d entries, want k0, newcomer, second and later", len(got))
	}
	if n := h.srv.roster.Len(); n != 4 {
		t.Errorf("expired entries still stored: %d", n)
	}
}

// maxAnnouncement returns an announcement of exactly wire.MaxAnnounceBytes for
// pubkey.
func maxAnnouncement(tb testing.TB, pubkey string) string {
	tb.Helper()
	return string(paddedBody(tb, `{"pubkey":"`+pubkey+`","pad":"`, `"}`, wire.MaxAnnounceBytes))
}

// TestRosterByteBound: announcements of the largest size from ever new
// keys never make a listing larger than MaxRosterBytes; the latest ones
// stay listed and the ones refreshed longest ago make room.
func TestRosterByteBound(t *testing.T) {
	h, _ := newFakeHarness(t, 0)
	const n = 2000 // 2000 x 4 KiB is past the byte bound, not the count
	for i := range n {
		h.announce(maxAnnouncement(t, "k"+strconv.Itoa(i)))
		if b := h.srv.roster.Size(); b > MaxRosterBytes-len(wire.RosterOpen)-len(wire.RosterClose) {
			t.Fatalf("after %d announcements the roster costs %d bytes, more than %d", i+1, b, MaxRosterBytes-len(wire.RosterOpen)-len(wire.RosterClose))
		}
	}
	h.clock.Add(RosterRetention - time.Millisecond) // the widest ages a listing shows
	rec := h.do(http.MethodGet, "/roster", "")
	if rec.Body.Len() > MaxRosterBytes {
		t.Fatalf("roster response of %d bytes, more than %d", rec.Body.Len(), MaxRosterBytes)
	}
	if cl := rec.Header().Get("Content-Length"); cl != strconv.Itoa(rec.Body.Len()) {
		t.Fatalf("Content-Length %s for a body of %d bytes", cl, rec.Body.Len())
	}
	got := h.rosterOf()
	kept := len(got)
	if kept >= n || kept < MaxRosterBytes/(wire.MaxAnnounceBytes+wire.RosterEntryOverhead) {
		t.Fatalf("kept %d of %d entries", kept, n)
	}
	for i := range n {
		listed := containsKey(got, "k"+strconv.Itoa(i))
		if want := i >= n-kept; listed != want {
			t.Fatalf("k%d listed %v; the latest %d entries should be", i, listed, kept)
		}
	}
}

// TestRosterListingSharesOneEncoding: listings of an unchanged roster use
// the same snapshot, and a listing allocates a small fraction of what it
// sends; any change makes a new snapshot.
func TestRosterListingSharesOneEncoding(t *testing.T) {
	h, _ := newFakeHarness(t, 0)
	for i := range 1000 {
		h.announce(maxAnnouncement(t, "k"+strconv.Itoa(i)))
	}
	first := h.srv.roster.Snapshot()
	h.clock.Add(time.Second) // ages change, the snapshot does not
	if h.srv.roster.Snapshot() != first {
		t.Fatal("a listing without a change made a new snapshot")
	}
	req := httptest.NewRequest(http.MethodGet, "/roster", nil)
	w := &countingWriter{header: http.Header{}}
	h.srv.ServeHTTP(w, req) // warm up
	sent := w.n
	if sent < 1000*wire.MaxAnnounceBytes {
		t.Fatalf("listing sent %d bytes", sent)
	}
	const runs = 20
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range runs {
		h.srv.ServeHTTP(&countingWriter{header: http.Header{}}, req)
	}
	runtime.ReadMemStats(&after)
	perListing := (after.TotalAlloc - before.TotalAlloc) / runs
	if perListing > 64<<10 {
		t.Errorf("a listing of %d bytes allocated %d bytes", sent, perListing)
	}
	t.Logf("a listing of %d bytes allocated %d bytes", sent, perListing)
	h.announce(`{"pubkey":"k1","name":"changed"}`)
	if h.srv.roster.Snapshot() == first {
		t.Fatal("an announcement left the old snapshot in place")
	}
	if code := h.post("/unregister", `{"pubkey":"k1"}`); code != http.StatusAccepted {
		t.Fatal(code)
	}
	if containsKey(h.rosterOf(), "k1") {
		t.Fatal("an unregister left the old snapshot in place")
	}
}

// countingWriter is a ResponseWriter that counts the body and keeps none of
// it.
type countingWriter struct {
	header http.Header
	code   int
	n      int
}

func (w *countingWriter) Header() http.Header  { return w.header }
func (w *countingWriter) WriteHeader(code int) { w.code = code }
func (w *countingWriter) Write(b []byte) (int, error) {
	w.n += len(b)
	return len(b), nil
}

// TestRosterListingHidesExpired: the Content-Length of a listing matches
// its body when expired entries sit between live ones, and HEAD sends the
// same length without a body.
func TestRosterListingHidesExpired(t *testing.T) {
	h, _ := newFakeHarness(t, 0)
	h.announce(`{"pubkey":"b"}`)
	h.clock.Add(RosterRetention - time.Second)
	h.announce(`{"pubkey":"a"}`)
	h.announce(`{"pubkey":"c"}`)
	h.clock.Add(time.Second) // b expires; no announcement prunes it
	rec := h.do(http.MethodGet, "/roster", "")
	want := `{"roster":[{"age_ms":1000,"pubkey":"a"},{"age_ms":1000,"pubkey":"c"}]}`
	if rec.Body.String() != want {
		t.Fatalf("listing %s, want %s", rec.Body, want)
	}
	if cl := rec.Header().Get("Content-Length"); cl != strconv.Itoa(len(want)) {
		t.Fatalf("Content-Length %s, want %d", cl, len(want))
	}
	head := h.do(http.MethodHead, "/roster", "")
	if head.Code != http.StatusOK || head.Header().Get("Content-Length") != strconv.Itoa(len(want)) || head.Body.Len() != 0 {
		t.Fatalf("HEAD: %d, Content-Length %s, body %q", head.Code, head.Header().Get("Content-Length"), head.Body)
	}
	if n := h.srv.roster.Len(); n != 3 {
		t.Errorf("the expired entry is hidden, not deleted: %d entries", n)
	}
}

func TestUnregisterRemovesOneEntry(t *testing.T) {
	h, _ := newFakeHarness(t, 0)
	h.announce(`{"pubkey":"k","session":{"session_id":"s1"}}`)
	h.announce(`{"pubkey":"k","session":{"session_id":"s2"}}`)
	h.announce(`{"pubkey":"k"}`)
	if code := h.post("/unregister", `{"pubkey":"k","session":{"session_id":"s1","cwd":"/x"},"sig":"garbage"}`); code != http.StatusAccepted {
		t.Fatalf("unregister: %d", code)
	}
	got := h.rosterOf()
	if len(got) != 2 {
		t.Fatalf("after unregistering s1: %v", got)
	}
	for _, e := range got {
		if s, ok := e["session"].(map[string]any); ok && s["session_id"] == "s1" {
			t.Errorf("s1 still listed")
		}
	}
	if code := h.post("/unregister", `{"pubkey":"unknown"}`); code != http.StatusAccepted {
		t.Errorf("unregister of an unknown key: %d", code)
	}
}

func TestRosterDoesNotVerifyAnnouncements(t *testing.T) {
	h, _ := newFakeHarness(t, 0)
	h.announce(`{"pubkey":"not even base64!","sig":"garbage","ts":"not a number"}`)
	got := h.rosterOf()
	if len(got) != 1 || got[0]["sig"] != "garbage" {
		t.Errorf("roster = %v", got)
	}
}

func TestConcurrentAnnouncers(t *testing.T) {
	h, _ := newFakeHarness(t, 0)
	fillRoster(h, RosterCap-50)
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for g := range 100 {
		wg.Go(func() {
			for i := range 20 {
				body := fmt.Sprintf(`{"pubkey":"g%d","session":{"session_id":"%d"}}`, g, i)
				if rec := h.do(http.MethodPost, "/announce", body); rec.Code != http.StatusAccepted {
					errs <- fmt.Errorf("announce %d/%d: %d", g, i, rec.Code)
					return
				}
				if i%5 == 0 {
					h.do(http.MethodGet, "/roster", "")
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := h.srv.roster.Len(); n != RosterCap {
		t.Errorf("roster size %d, want exactly %d", n, RosterCap)
	}
	if got := h.rosterOf(); len(got) != RosterCap {
		t.Errorf("listed %d entries", len(got))
	}
}

// TestRosterOrder: the listing is sorted by roster key, so it is stable.
func TestRosterOrder(t *testing.T) {
	h, _ := newFakeHarness(t, 0)
	for _, k := range []string{"c", "a", "b"} {
		h.announce(`{"pubkey":"` + k + `"}`)
	}
	got := h.rosterOf()
	for i, want := range []string{"a", "b", "c"} {
		if got[i]["pubkey"] != want {
			t.Fatalf("roster order: %v", got)
		}
	}
}

func containsKey(entries []map[string]any, pubkey string) bool {
	return findKey(entries, pubkey) != nil
}

func findKey(entries []map[string]any, pubkey string) map[string]any {
	for _, e := range entries {
		if e["pubkey"] == pubkey {
			return e
		}
	}
	return nil
}

// TestRosterClockBack: after the wall clock goes back, an entry behind the
// head of the refresh list can expire first; it is hidden at once and
// pruned once the entries before it go.
func TestRosterClockBack(t *testing.T) {
	h, _ := newFakeHarness(t, 0)
	h.announce(`{"pubkey":"a"}`)
	h.clock.Add(-time.Hour)
	h.announce(`{"pubkey":"b"}`) // refreshed after a, stamped an hour earlier
	h.clock.Add(RosterRetention)
	h.announce(`{"pubkey":"c"}`)
	got := h.rosterOf()
	if len(got) != 2 || !containsKey(got, "a") || !containsKey(got, "c") {
		t.Fatalf("listing %v, want a and c", got)
	}
	if n := h.srv.roster.Len(); n != 3 {
		t.Fatalf("%d entries stored, want a, b (expired, behind a) and c", n)
	}
	h.clock.Add(time.Hour)
	h.announce(`{"pubkey":"d"}`)
	if n := h.srv.roster.Len(); n != 2 {
		t.Errorf("%d entries stored after a expired, want c and d", n)
	}
}
