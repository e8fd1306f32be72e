package bus

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/interlink-go/interlink/internal/testutil"
	"github.com/interlink-go/interlink/internal/wire"
)

// rosterWith serves GET target with the given If-None-Match header values.
func (h *harness) rosterWith(target string, ifNoneMatch ...string) *httptest.ResponseRecorder {
	h.tb.Helper()
	req := httptest.NewRequest(http.MethodGet, target, nil)
	req.RemoteAddr = loopbackClient
	for _, v := range ifNoneMatch {
		req.Header.Add("If-None-Match", v)
	}
	rec := httptest.NewRecorder()
	h.srv.ServeHTTP(rec, req)
	return rec
}

// testKey returns the text form of a valid public key, distinct per seed.
func testKey(t *testing.T, seed byte) string {
	t.Helper()
	return testutil.Signer(t, seed).Public().String()
}

func TestRosterRevalidationAnswers304UntilTheRosterChanges(t *testing.T) {
	h, _ := newFakeHarness(t, 0)
	h.announce(`{"pubkey":"a","name":"one"}`)
	first := h.rosterWith("/roster")
	tag := first.Header().Get("ETag")
	if first.Code != http.StatusOK || !strings.HasPrefix(tag, `W/"`) {
		t.Fatalf("plain listing: %d, ETag %q", first.Code, tag)
	}
	// Ages move on; the entries, and so the tag, do not.
	h.clock.Add(5 * time.Second)
	for _, inm := range []string{tag, strings.TrimPrefix(tag, "W/"), `"other", ` + tag, "*"} {
		rec := h.rosterWith("/roster", inm)
		if rec.Code != http.StatusNotModified || rec.Body.Len() != 0 || rec.Header().Get("ETag") != tag {
			t.Errorf("If-None-Match %s: %d %q, ETag %q; want 304, no body, the same tag", inm, rec.Code, rec.Body, rec.Header().Get("ETag"))
		}
	}
	if rec := h.rosterWith("/roster", `W/"r0000000000000000"`); rec.Code != http.StatusOK {
		t.Errorf("a tag that does not match: %d", rec.Code)
	}
	// A refresh with the same fields is a change: the entry's age restarts.
	h.announce(`{"pubkey":"a","name":"one"}`)
	refreshed := h.rosterWith("/roster", tag)
	if refreshed.Code != http.StatusOK || refreshed.Header().Get("ETag") == tag {
		t.Fatalf("after a refresh: %d, ETag %q (was %q)", refreshed.Code, refreshed.Header().Get("ETag"), tag)
	}
	if !strings.Contains(refreshed.Body.String(), `"age_ms":0,`) {
		t.Errorf("refreshed listing: %s", refreshed.Body)
	}
	tag = refreshed.Header().Get("ETag")
	if code := h.post("/unregister", `{"pubkey":"a"}`); code != http.StatusAccepted {
		t.Fatal(code)
	}
	if rec := h.rosterWith("/roster", tag); rec.Code != http.StatusOK || rec.Body.String() != `{"roster":[]}` {
		t.Errorf("after an unregister: %d %s", rec.Code, rec.Body)
	}
}

func TestRosterTagChangesWhenAnEntryExpires(t *testing.T) {
	h, _ := newFakeHarness(t, 0)
	h.announce(`{"pubkey":"old"}`)
	h.clock.Add(time.Hour)
	h.announce(`{"pubkey":"new"}`)
	tag := h.rosterWith("/roster").Header().Get("ETag")
	h.clock.Add(RosterRetention - time.Hour) // "old" expires; nothing was announced
	rec := h.rosterWith("/roster", tag)
	if rec.Code != http.StatusOK || strings.Contains(rec.Body.String(), `"old"`) || !strings.Contains(rec.Body.String(), `"new"`) {
		t.Fatalf("after an expiry: %d %s", rec.Code, rec.Body)
	}
	if again := h.rosterWith("/roster", rec.Header().Get("ETag")); again.Code != http.StatusNotModified {
		t.Errorf("revalidating the listing without the expired entry: %d", again.Code)
	}
}

func TestPlainRosterAnswerKeepsItsBytes(t *testing.T) {
	h, _ := newFakeHarness(t, 0)
	h.announce(`{"pubkey":"b","name":"bee","session":{"session_id":"s"},"age_ms":7}`)
	h.clock.Add(1500 * time.Millisecond)
	h.announce(`{"pubkey":"a"}`)
	const want = `{"roster":[{"age_ms":0,"pubkey":"a"},{"age_ms":1500,"name":"bee","pubkey":"b","session":{"session_id":"s"}}]}`
	for _, target := range []string{"/roster", "/roster?unknown=1"} {
		rec := h.rosterWith(target)
		if rec.Code != http.StatusOK || rec.Body.String() != want || rec.Header().Get("Content-Type") != "application/json" ||
			rec.Header().Get("Content-Length") != "109" {
			t.Errorf("GET %s: %d %v\n%s\nwant %s", target, rec.Code, rec.Header(), rec.Body, want)
		}
	}
}

func TestRosterLookupListsOnlyTheAskedKeys(t *testing.T) {
	h, _ := newFakeHarness(t, 0)
	k1, k2, k3 := testKey(t, 1), testKey(t, 2), testKey(t, 3)
	for _, body := range []string{
		`{"pubkey":"` + k1 + `","session":{"session_id":"s2"}}`,
		`{"pubkey":"` + k1 + `","session":{"session_id":"s1"}}`,
		`{"pubkey":"` + k1 + `"}`,
		`{"pubkey":"` + k2 + `","session":{"session_id":"s"}}`,
		`{"pubkey":"` + k3 + `","session":{"session_id":"s"}}`,
		// Keys that start like k1 but are not k1 sort around its entries.
		`{"pubkey":"` + k1 + `!","session":{"session_id":"x"}}`,
		`{"pubkey":"` + k1 + `$"}`,
		`{"pubkey":"` + k1 + `x#y"}`,
	} {
		h.announce(body)
	}
	rec := h.rosterWith("/roster?keys=" + url.QueryEscape(k3+","+k1+","+k3))
	var got struct{ Roster []map[string]any }
	if err := json.Unmarshal(rec.Body.Bytes(), &got); rec.Code != http.StatusOK || err != nil {
		t.Fatalf("lookup: %d %s", rec.Code, rec.Body)
	}
	var routes []string
	for _, e := range got.Roster {
		r := e["pubkey"].(string)
		if s, ok := e["session"].(map[string]any); ok {
			r += "#" + s["session_id"].(string)
		}
		routes = append(routes, r)
	}
	// In roster key order: each key's entries together, keys sorted.
	want := []string{k1, k1 + "#s1", k1 + "#s2", k3 + "#s"}
	if k3 < k1 {
		want = append(want[3:], want[:3]...)
	}
	if strings.Join(routes, " ") != strings.Join(want, " ") {
		t.Errorf("lookup of k3,k1 listed\n%v\nwant\n%v", routes, want)
	}
	// A lookup has a tag of its own and revalidates like the full list.
	tag := rec.Header().Get("ETag")
	if full := h.rosterWith("/roster").Header().Get("ETag"); full == tag {
		t.Error("the lookup and the full list share a tag")
	}
	if again := h.rosterWith("/roster?keys="+k1+","+k3, tag); again.Code != http.StatusNotModified {
		t.Errorf("revalidating the lookup: %d", again.Code)
	}
	h.announce(`{"pubkey":"` + k2 + `","session":{"session_id":"s"},"name":"changed"}`)
	if again := h.rosterWith("/roster?keys="+k1+","+k3, tag); again.Code != http.StatusNotModified {
		t.Errorf("a change to a key not asked for changed the lookup's tag: %d", again.Code)
	}
	if none := h.rosterWith("/roster?keys=" + testKey(t, 9)); none.Code != http.StatusOK || none.Body.String() != `{"roster":[]}` {
		t.Errorf("lookup of an absent key: %d %s", none.Code, none.Body)
	}
}

func TestBadRosterQueriesAreRefused(t *testing.T) {
	h, _ := newFakeHarness(t, 0)
	k := testKey(t, 1)
	many := strings.TrimSuffix(strings.Repeat(k+",", wire.MaxRosterKeys+1), ",")
	for name, query := range map[string]string{
		"empty keys":         "keys=",
		"keys twice":         "keys=" + k + "&keys=" + k,
		"not a key":          "keys=" + k + ",nope",
		"a key too short":    "keys=" + k[:42],
		"an empty item":      "keys=" + k + ",",
		"too many keys":      "keys=" + many,
		"a broken encoding":  "keys=%zz",
		"a route, not a key": "keys=" + url.QueryEscape(k+"#s"),
	} {
		t.Run(name, func(t *testing.T) {
			rec := h.rosterWith("/roster?" + query)
			var body struct{ Error string }
			if rec.Code != http.StatusBadRequest || json.Unmarshal(rec.Body.Bytes(), &body) != nil ||
				!strings.HasPrefix(body.Error, "bad query: ") {
				t.Errorf("%s: %d %s; want 400 with a JSON error", query, rec.Code, rec.Body)
			}
		})
	}
	if rec := h.rosterWith("/roster?keys=" + strings.TrimSuffix(strings.Repeat(k+",", wire.MaxRosterKeys), ",")); rec.Code != http.StatusOK {
		t.Errorf("%d keys: %d %s", wire.MaxRosterKeys, rec.Code, rec.Body)
	}
}
