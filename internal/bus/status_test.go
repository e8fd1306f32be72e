package bus

import (
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

// TestStatusPageShowsTheBusAsItIs: the page at GET / lists the roster's
// sessions, live ones first, with the bus's own figures: the queues, the
// parked polls and the messages stored, charted per 10 s step.
func TestStatusPageShowsTheBusAsItIs(t *testing.T) {
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
