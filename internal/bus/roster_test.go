package bus

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
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
		a, err := decodeAnnouncement([]byte(tc.body))
		if err != nil || a.key != tc.key {
			t.Errorf("%s: key %q (%v), want %q", tc.body, a.key, err, tc.key)
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
	if n := h.srv.roster.len(); n != 1 {
		t.Fatalf("the expired entry is hidden, not deleted: %d entries", n)
	}
	h.announce(`{"pubkey":"new"}`)
	if n := h.srv.roster.len(); n != 1 {
		t.Errorf("after an announce the expired entry is pruned: %d entries", n)
	}
}

// fillRoster announces n keys "k0".."k(n-1)".
func fillRoster(h *harness, n int) {
	for i := range n {
		h.announce(`{"pubkey":"k` + strconv.Itoa(i) + `"}`)
	}
}

func TestFullRosterCap(t *testing.T) {
	h, _ := newFakeHarness(t, 0)
	fillRoster(h, RosterCap)
	h.clock.Add(time.Second)
	h.announce(`{"pubkey":"newcomer"}`)
	if got := h.rosterOf(); len(got) != RosterCap || containsKey(got, "newcomer") {
		t.Fatalf("a newcomer to a full roster was listed (%d entries)", len(got))
	}
	h.announce(`{"pubkey":"k7","name":"refreshed"}`)
	if got := findKey(h.rosterOf(), "k7"); got == nil || got["name"] != "refreshed" || got["age_ms"] != 0.0 {
		t.Fatalf("refresh in a full roster: %v", got)
	}
	if code := h.post("/unregister", `{"pubkey":"k0"}`); code != http.StatusAccepted {
		t.Fatalf("unregister: %d", code)
	}
	h.announce(`{"pubkey":"newcomer"}`)
	if !containsKey(h.rosterOf(), "newcomer") {
		t.Fatal("newcomer not admitted after an unregister")
	}
	// Everything but the refreshed and new entries expires.
	h.clock.Add(RosterRetention - time.Second)
	h.announce(`{"pubkey":"later"}`)
	if got := h.rosterOf(); len(got) != 3 || !containsKey(got, "later") {
		t.Errorf("after expiry: %d entries, want k7, newcomer and later", len(got))
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
	if n := h.srv.roster.len(); n != RosterCap {
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
