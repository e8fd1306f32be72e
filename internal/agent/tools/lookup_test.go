package tools_test

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/interlink-go/interlink/internal/agent"
	"github.com/interlink-go/interlink/internal/agent/agenttest"
	"github.com/interlink-go/interlink/internal/bus/bustest"
	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/relay"
	"github.com/interlink-go/interlink/internal/testutil"
)

// rosterBytes counts the /roster exchanges a bus serves, by their HTTP/1.1
// message bytes: the request line and headers, and the status line,
// headers and body of the answer.
type rosterBytes struct {
	mu      sync.Mutex
	queries []string
	codes   []int
	total   int
}

func (rb *rosterBytes) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/roster" {
			next.ServeHTTP(w, r)
			return
		}
		var head bytes.Buffer
		fmt.Fprintf(&head, "%s %s HTTP/1.1\r\nHost: %s\r\n", r.Method, r.URL.RequestURI(), r.Host)
		_ = r.Header.Write(&head)
		cw := &countWriter{ResponseWriter: w}
		next.ServeHTTP(cw, r)
		rb.mu.Lock()
		rb.queries = append(rb.queries, r.URL.RawQuery)
		rb.codes = append(rb.codes, cw.code)
		rb.total += head.Len() + 2 + cw.n
		rb.mu.Unlock()
	})
}

// countWriter counts what passes through it, headers included.
type countWriter struct {
	http.ResponseWriter
	n, code int
}

func (w *countWriter) WriteHeader(code int) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "HTTP/1.1 %d %s\r\n", code, http.StatusText(code))
	_ = w.Header().Write(&b)
	w.n += b.Len() + 2
	w.code = code
	w.ResponseWriter.WriteHeader(code)
}

func (w *countWriter) Write(p []byte) (int, error) {
	w.n += len(p)
	return w.ResponseWriter.Write(p)
}

// A send to a known peer reads that peer's roster entries alone, so what
// it costs does not grow with the roster: here 300 other sessions are
// listed and the send stays under 2 KiB of roster traffic.
func TestSendToAKnownPeerReadsItsEntriesAlone(t *testing.T) {
	var rb rosterBytes
	url := bustest.Start(t, &bustest.Options{Wrap: rb.wrap})
	alice, bob := agenttest.NewIdent(t), agenttest.NewIdent(t)
	alice.Admit(t, "bob", bob)
	others := relay.New(url, nil)
	for i := range 300 {
		s := testutil.NumberedSigner(t, 10_000+i)
		info := identity.SessionInfo{SessionID: fmt.Sprint("other-", i), Cwd: "/work/other", Summary: "someone else"}
		if err := others.Announce(t.Context(), s.Announce(fmt.Sprint("other", i), info, identity.Millis(time.Now()))); err != nil {
			t.Fatal(err)
		}
	}
	agenttest.Announce(t, url, bob, "b1")
	a := agenttest.Start(t, alice, "a1", []string{url}, nil)

	rb.mu.Lock()
	rb.queries, rb.total = nil, 0
	rb.mu.Unlock()
	if got := a.OK("send_message", map[string]any{"to": "bob", "text": "hi"}); !strings.HasPrefix(got, "queued for bob (b1)") {
		t.Fatalf("send_message = %q", got)
	}
	rb.mu.Lock()
	defer rb.mu.Unlock()
	if len(rb.queries) == 0 {
		t.Fatal("the send read no roster")
	}
	for _, q := range rb.queries {
		if q != "keys="+bob.Key() {
			t.Errorf("the send read /roster?%s; want the lookup of bob's key alone", q)
		}
	}
	if rb.total > 2048 {
		t.Errorf("the send cost %d bytes of roster traffic, over 2 KiB", rb.total)
	}
	t.Logf("roster traffic of one send: %d bytes in %d requests", rb.total, len(rb.queries))
}

// discover lists the whole roster, and asks again with the tag of the
// last listing: an unchanged roster costs a 304 and no body.
func TestDiscoverRevalidatesTheRoster(t *testing.T) {
	var rb rosterBytes
	url := bustest.Start(t, &bustest.Options{Wrap: rb.wrap})
	alice, bob := agenttest.NewIdent(t), agenttest.NewIdent(t)
	agenttest.Announce(t, url, bob, "b1")
	// No announcement of alice's may fall between the two discovers.
	a := agenttest.Start(t, alice, "a1", []string{url}, &agenttest.Options{Edit: func(c *agent.Config) { c.Timing.Announce = time.Hour }})
	agenttest.OnRoster(t, url, alice.Key(), "a1")
	agenttest.Announce(t, url, bob, "b1") // nothing changes after this but ages

	first := a.OK("discover", nil)
	second := a.OK("discover", nil)
	if !strings.Contains(first, "b1") || !strings.Contains(second, "b1") || !strings.Contains(second, "a1") {
		t.Fatalf("discover:\n%s\nthen\n%s", first, second)
	}
	rb.mu.Lock()
	defer rb.mu.Unlock()
	n := len(rb.codes)
	if n < 2 || rb.codes[n-2] != http.StatusOK || rb.codes[n-1] != http.StatusNotModified || rb.queries[n-1] != "" {
		t.Errorf("the two discovers were answered %v (queries %q); want 200, then 304", rb.codes, rb.queries)
	}
}
