package statuspage

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/roster"
	"github.com/interlink-go/interlink/internal/wire"
)

// testEpoch is where the fake clock starts: a fixed time in Unix ms.
const testEpoch = 1_700_000_000_000

// fakeClock is a wall clock that moves only when told to.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time // guarded by mu
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// harness is a page on its own roster and clock, with fixed counts.
type harness struct {
	tb     testing.TB
	clock  *fakeClock
	roster *roster.Roster
	page   *Page
}

func newHarness(tb testing.TB) *harness {
	h := &harness{tb: tb, clock: &fakeClock{t: time.UnixMilli(testEpoch)}, roster: &roster.Roster{}}
	h.page = New(Options{Version: "v1.2.3", Now: h.clock.Now, Roster: h.roster,
		Counts: func() Counts { return Counts{Parked: 3, Routes: 4, Queued: 5, Totals: true} }})
	return h
}

// announce puts an announcement in the roster, received now.
func (h *harness) announce(body string) {
	h.tb.Helper()
	a, err := wire.DecodeAnnounce([]byte(body))
	if err != nil {
		h.tb.Fatalf("announcement %s: %v", body, err)
	}
	if _, stored := h.roster.Upsert(a, h.clock.Now().UnixMilli()); !stored {
		h.tb.Fatalf("announcement %s not stored", body)
	}
}

// do serves one request of method to the page.
func (h *harness) do(method string) *httptest.ResponseRecorder {
	h.tb.Helper()
	rec := httptest.NewRecorder()
	if err := h.page.Serve(rec, httptest.NewRequest(method, "/", nil)); err != nil {
		h.tb.Fatalf("%s /: %v", method, err)
	}
	return rec
}

// statusPageOf serves GET / and returns the page, checking its headers.
func (h *harness) statusPageOf() string {
	h.tb.Helper()
	rec := h.do(http.MethodGet)
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

// jstr returns s as a JSON string.
func jstr(s string) string {
	b, err := identity.Marshal(s)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func TestStatusPageShowsHostileRosterTextAsText(t *testing.T) {
	h := newHarness(t)
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
		h.clock.Add(PageAge)
		h.statusPageOf()
	})
}

// TestStatusPageCostDoesNotGrowWithTheRoster: the page lists at most 500
// sessions, and what rendering it costs stops growing there: a full
// roster ([roster.Cap] sessions) costs no more than one of 600, because entries
// are read for the page once, not on every request, and only those
// listed.
func TestStatusPageCostDoesNotGrowWithTheRoster(t *testing.T) {
	small := newHarness(t)
	small.fillRoster(600)
	full := newHarness(t)
	full.fillRoster(roster.Cap)
	a600, aFull := small.renderAllocs(), full.renderAllocs()
	t.Logf("allocations per render: %.0f with 600 sessions, %.0f with %d", a600, aFull, roster.Cap)
	if aFull > a600*1.1+100 {
		t.Errorf("rendering the page with %d sessions allocates %.0f times, with 600 %.0f: the cost grows with the roster",
			roster.Cap, aFull, a600)
	}
}

// TestStatusPageRenderedAtMostOnceASecond: within a second of rendering,
// the page is served again as it was, for GET and HEAD alike, however the
// roster changed; after that second, or when the clock went back, it is
// rendered anew.
func TestStatusPageRenderedAtMostOnceASecond(t *testing.T) {
	h := newHarness(t)
	h.announce(`{"pubkey":"AAAAAAAAone","name":"first-one"}`)
	first := h.statusPageOf()
	h.announce(`{"pubkey":"BBBBBBBBtwo","name":"second-one"}`)
	h.clock.Add(PageAge - time.Millisecond)
	if again := h.statusPageOf(); again != first {
		t.Error("the page was rendered again within a second")
	}
	if rec := h.do(http.MethodHead); rec.Header().Get("Content-Length") != fmt.Sprint(len(first)) || rec.Body.Len() != 0 {
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
	h := newHarness(t)
	h.announce(`{"pubkey":"AAAAAAAAkey","name":"before","session":{"session_id":"s1","summary":"old work"}}`)
	if page := h.statusPageOf(); !strings.Contains(page, "old work") {
		t.Fatal("the page lacks the first announcement")
	}
	h.clock.Add(PageAge)
	h.announce(`{"pubkey":"AAAAAAAAkey","name":"after","session":{"session_id":"s1","summary":"new work"}}`)
	h.clock.Add(PageAge)
	page := h.statusPageOf()
	if !strings.Contains(page, "new work") || !strings.Contains(page, "after") || strings.Contains(page, "old work") {
		t.Errorf("after a refresh the page shows:\n%s", page)
	}
}

// TestStatusPageShowsTheFiguresItIsGiven: the page shows the counts the
// bus reads for it, its version and uptime, and charts the messages counted
// as stored and delivered in the step they fell in.
func TestStatusPageShowsTheFiguresItIsGiven(t *testing.T) {
	h := newHarness(t)
	h.clock.Add(3 * time.Minute)
	now := h.clock.Now().UnixMilli()
	h.page.Stored(now)
	h.page.Stored(now)
	h.page.Delivered(now)
	page := h.statusPageOf()
	for _, want := range []string{`<dd id="routes">4</dd>`, `<dd id="queued">5</dd>`, `<dd id="parked">3</dd>`,
		"version v1.2.3", "up 3m", "2 stored", "1 delivered"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if s, d := strings.Count(page, `<rect class="stored"`), strings.Count(page, `<rect class="delivered"`); s != 1 || d != 1 {
		t.Errorf("%d stored and %d delivered bars, want one of each", s, d)
	}
}

// TestStatusPageKeepsViewsOnlyOfTheSessionsItLists: what the page keeps of
// the entries it read is bounded by the sessions it lists, not by the
// roster.
func TestStatusPageKeepsViewsOnlyOfTheSessionsItLists(t *testing.T) {
	h := newHarness(t)
	h.fillRoster(statusSessionLimit + 100)
	page := h.statusPageOf()
	if !strings.Contains(page, "and 100 more, not shown") {
		t.Error("the page does not say how many sessions it left out")
	}
	h.page.mu.Lock()
	defer h.page.mu.Unlock()
	if n := len(h.page.views); n != statusSessionLimit {
		t.Errorf("the page keeps %d views, want %d", n, statusSessionLimit)
	}
}
