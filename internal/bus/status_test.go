package bus

import (
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"
)

// statusPageOf serves GET / and returns the page, checking its headers.
func (h *harness) statusPageOf() string {
	h.tb.Helper()
	rec := h.do(http.MethodGet, "/", "")
	if rec.Code != http.StatusOK {
		h.tb.Fatalf("status page: %d %s", rec.Code, rec.Body)
	}
	if ct := rec.Header().Get("Content-Type"); ct != "text/html; charset=utf-8" {
		h.tb.Errorf("Content-Type %q", ct)
	}
	if csp := rec.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") || strings.Contains(csp, "script") {
		h.tb.Errorf("Content-Security-Policy %q allows scripts or sources", csp)
	}
	return rec.Body.String()
}

func TestStatusPageShowsHostileRosterTextAsText(t *testing.T) {
	h := newMemoryHarness(t, 0, 0)
	hostile := []struct{ name, session, summary string }{
		{`<script>alert(1)</script>`, `s1`, `"><img src=x onerror=alert(2)>`},
		{`</td></tr></table><h1>owned</h1>`, `<svg onload=alert(3)>`, `{{.Version}} & &amp;`},
		{"evil\u202egnp.exe", "s\x1b[31m3", "line\nbreak\u2028sep"},
		{`javascript:alert(4)`, `s4`, `<a href="javascript:alert(5)">x</a>`},
	}
	for i, e := range hostile {
		h.announce(fmt.Sprintf(`{"pubkey":"KEY%dxxxxxxxxxxx","name":%s,"session":{"session_id":%s,"summary":%s}}`,
			i, jstr(e.name), jstr(e.session), jstr(e.summary)))
	}
	// One with fields of the wrong types still gets a row.
	h.announce(`{"pubkey":"KEYwrongtypes","name":7,"session":"not an object"}`)
	page := h.statusPageOf()

	// The page's own markup has one h1 and one svg, and no img, script or
	// link; a roster value that became markup would add to these counts.
	for tag, want := range map[string]int{"<h1": 1, "<svg": 1, "<img": 0, "<script": 0, "<a ": 0, "<a>": 0} {
		if n := strings.Count(strings.ToLower(page), tag); n != want {
			t.Errorf("%d %s in the page, want %d: a roster value became markup", n, tag, want)
		}
	}
	if n := strings.Count(page, "</table>"); n != 1 {
		t.Errorf("%d tables closed, want 1", n)
	}
	if n := strings.Count(page, `<tr class="session">`); n != len(hostile)+1 {
		t.Errorf("%d session rows, want %d", n, len(hostile)+1)
	}
	for _, want := range []string{
		`&lt;script&gt;alert(1)&lt;/script&gt;`,
		`&#34;&gt;&lt;img src=x onerror=alert(2)&gt;`,
		`&lt;/td&gt;&lt;/tr&gt;&lt;/table&gt;&lt;h1&gt;owned&lt;/h1&gt;`,
		`{{.Version}} &amp; &amp;amp;`,
		`evilgnp.exe`,         // the bidi override is removed, as agents remove it
		`s[31m3`,              // and the escape character
		`linebreaksep`,        // line breaks and separators too
		`javascript:alert(4)`, // a name is text, never a link
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(page, "\u202e") || strings.Contains(page, "\x1b") {
		t.Error("control or format characters reached the page")
	}
	if strings.Contains(strings.ToLower(page), "<script") {
		t.Error("the page has a script")
	}
}

func TestStatusPageListsSessionsLiveAndAway(t *testing.T) {
	h := newMemoryHarness(t, 0, 0)
	h.announce(`{"pubkey":"AAAAAAAAold","name":"old-one","session":{"session_id":"o1","summary":"stale"}}`)
	h.clock.Add(2 * time.Minute)
	h.announce(`{"pubkey":"BBBBBBBBnew","name":"new-one","session":{"session_id":"n1","summary":"fixing the parser"}}`)
	h.send("K#q", `{}`)
	h.send("K#q", `{}`)
	page := h.statusPageOf()
	rows := regexp.MustCompile(`(?s)<tr class="session">.*?</tr>`).FindAllString(page, -1)
	if len(rows) != 2 {
		t.Fatalf("%d rows:\n%s", len(rows), page)
	}
	// Live sessions come first.
	for i, want := range []struct{ name, fp, sid, state, ago, summary string }{
		{"new-one", "BBBBBBBB", "n1", `<span class="live">live</span>`, "0s ago", "fixing the parser"},
		{"old-one", "AAAAAAAA", "o1", `<span class="away">away</span>`, "2m ago", "stale"},
	} {
		for _, part := range []string{want.name, "<code>" + want.fp + "</code>", want.sid, want.state, want.ago, want.summary} {
			if !strings.Contains(rows[i], part) {
				t.Errorf("row %d lacks %q:\n%s", i, part, rows[i])
			}
		}
	}
	for _, want := range []string{`<dd id="routes">1</dd>`, `<dd id="queued">2</dd>`, `<dd id="parked">0</dd>`,
		"<dd>1 / 2</dd>", `<meta http-equiv="refresh" content="10">`, "2 stored"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if n := strings.Count(page, `<rect class="stored"`); n != 1 {
		t.Errorf("%d stored bars, want 1 (both sends in one 10 s step)", n)
	}
}

// fillRoster announces n sessions with 1 KiB summaries.
func (h *harness) fillRoster(n int) {
	h.tb.Helper()
	summary := strings.Repeat("fixing the parser ", 57)
	for i := range n {
		h.announce(fmt.Sprintf(`{"pubkey":"KEY%05dxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx","name":"node %d","session":{"session_id":"s%d","summary":%s}}`,
			i, i, i, jstr(summary)))
	}
}

// renderAllocs returns the allocations of rendering the status page anew,
// once the page rendered before has expired.
func (h *harness) renderAllocs() float64 {
	h.tb.Helper()
	h.statusPageOf()
	return testing.AllocsPerRun(5, func() {
		h.clock.Add(statusPageAge)
		h.statusPageOf()
	})
}

// TestStatusPageCostDoesNotGrowWithTheRoster: the page lists at most 500
// sessions, and what rendering it costs stops growing there: a full
// roster ([RosterCap] sessions) costs no more than one of 600, because entries
// are read for the page once, not on every request, and only those
// listed.
func TestStatusPageCostDoesNotGrowWithTheRoster(t *testing.T) {
	small := newMemoryHarness(t, 0, 0)
	small.fillRoster(600)
	full := newMemoryHarness(t, 0, 0)
	full.fillRoster(RosterCap)
	a600, aFull := small.renderAllocs(), full.renderAllocs()
	t.Logf("allocations per render: %.0f with 600 sessions, %.0f with %d", a600, aFull, RosterCap)
	if aFull > a600*1.1+100 {
		t.Errorf("rendering the page with %d sessions allocates %.0f times, with 600 %.0f: the cost grows with the roster",
			RosterCap, aFull, a600)
	}
}

// TestStatusPageRenderedAtMostOnceASecond: within a second of rendering,
// the page is served again as it was, for GET and HEAD alike, however the
// roster changed; after that second, or when the clock went back, it is
// rendered anew.
func TestStatusPageRenderedAtMostOnceASecond(t *testing.T) {
	h := newMemoryHarness(t, 0, 0)
	h.announce(`{"pubkey":"AAAAAAAAone","name":"first-one"}`)
	first := h.statusPageOf()
	h.announce(`{"pubkey":"BBBBBBBBtwo","name":"second-one"}`)
	h.clock.Add(statusPageAge - time.Millisecond)
	if again := h.statusPageOf(); again != first {
		t.Error("the page was rendered again within a second")
	}
	if rec := h.do(http.MethodHead, "/", ""); rec.Header().Get("Content-Length") != fmt.Sprint(len(first)) || rec.Body.Len() != 0 {
		t.Errorf("HEAD: Content-Length %s, body %d bytes; want %d and none", rec.Header().Get("Content-Length"), rec.Body.Len(), len(first))
	}
	h.clock.Add(time.Millisecond)
	if page := h.statusPageOf(); !strings.Contains(page, "second-one") {
		t.Error("a second after rendering, the page does not show the new session")
	}
	// The wall clock goes back: the page rendered "in the future" is not
	// served for the time it takes to catch up.
	h.announce(`{"pubkey":"CCCCCCCCthree","name":"third-one"}`)
	h.clock.Add(-time.Hour)
	if page := h.statusPageOf(); !strings.Contains(page, "third-one") {
		t.Error("after the clock went back, the page was not rendered anew")
	}
}

// TestStatusPageShowsARefreshedAnnouncementAnew: what the page keeps of an
// announcement belongs to that announcement; a session that announces
// itself again with other values shows them.
func TestStatusPageShowsARefreshedAnnouncementAnew(t *testing.T) {
	h := newMemoryHarness(t, 0, 0)
	h.announce(`{"pubkey":"AAAAAAAAkey","name":"before","session":{"session_id":"s1","summary":"old work"}}`)
	if page := h.statusPageOf(); !strings.Contains(page, "old work") {
		t.Fatal("the page lacks the first announcement")
	}
	h.clock.Add(statusPageAge)
	h.announce(`{"pubkey":"AAAAAAAAkey","name":"after","session":{"session_id":"s1","summary":"new work"}}`)
	h.clock.Add(statusPageAge)
	page := h.statusPageOf()
	if !strings.Contains(page, "new work") || !strings.Contains(page, "after") || strings.Contains(page, "old work") {
		t.Errorf("after a refresh the page shows:\n%s", page)
	}
}
