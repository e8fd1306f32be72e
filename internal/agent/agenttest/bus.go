package agenttest

import (
	"context"
	"maps"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/interlink-go/interlink/internal/bus/bustest"
	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/pairing"
	"github.com/interlink-go/interlink/internal/relay"
	"github.com/interlink-go/interlink/internal/route"
	"github.com/interlink-go/interlink/internal/wire"
)

// StartBus starts an in-memory bus on loopback and returns its URL.
func StartBus(tb testing.TB) string { return bustest.Start(tb, nil) }

// StartSwitchableBus starts a bus whose endpoints can be made to fail.
func StartSwitchableBus(tb testing.TB) (string, *Switchable) {
	s := NewSwitchable()
	return bustest.Start(tb, &bustest.Options{Wrap: s.Wrap}), s
}

// Switchable wraps a bus so that it can answer 503 to everything, or to one
// endpoint, or refuse one endpoint with 400, and counts requests per path.
type Switchable struct {
	mu     sync.Mutex
	down   map[string]bool // path → answered with 503; "" means every path
	refuse map[string]bool // path → answered with 400
	counts map[string]int
}

// NewSwitchable returns a Switchable that lets everything through.
func NewSwitchable() *Switchable {
	return &Switchable{down: map[string]bool{}, refuse: map[string]bool{}, counts: map[string]int{}}
}

// Set makes requests for path ("" for every path) fail with 503, or stop
// failing.
func (s *Switchable) Set(path string, down bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.down[path] = down
}

// SetRefused makes requests for path answer 400, or stop.
func (s *Switchable) SetRefused(path string, refused bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refuse[path] = refused
}

// Count returns how many requests for path arrived.
func (s *Switchable) Count(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts[path]
}

// Counts returns how many requests arrived, by path.
func (s *Switchable) Counts() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.counts)
}

// Wrap wraps the bus handler h.
func (s *Switchable) Wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.counts[r.URL.Path]++
		down := s.down[""] || s.down[r.URL.Path]
		refused := s.refuse[r.URL.Path]
		s.mu.Unlock()
		switch {
		case down:
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write(wire.ErrorAnswer("down for the test", false))
			return
		case refused:
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write(wire.ErrorAnswer("refused for the test", false))
			return
		}
		h.ServeHTTP(w, r)
	})
}

// OnRoster waits until the relay at url lists key#session.
func OnRoster(tb testing.TB, url, key, session string) {
	tb.Helper()
	Eventually(tb, "session "+session+" on the roster of "+url, func() bool {
		return RosterHas(url, key, session)
	})
}

// RosterHas reports whether the relay at url lists key#session.
func RosterHas(url, key, session string) bool {
	ros := relay.FetchRoster(context.Background(), []*relay.Client{relayClient(url)})
	for _, e := range ros.Entries {
		if e.Key.String() == key && e.Session.SessionID == session {
			return true
		}
	}
	return false
}

// Queued reports whether the relay at url holds a message for rt, without
// taking it.
func Queued(tb testing.TB, url, rt string) bool {
	tb.Helper()
	d, err := relayClient(url).Recv(context.Background(), rt, 0)
	if err != nil {
		tb.Fatal(err)
	}
	return d.HasMessage
}

// Announce puts session on the roster of url as id, without a name.
func Announce(tb testing.TB, url string, id *Ident, session string) {
	tb.Helper()
	AnnounceAs(tb, url, id, "", session)
}

// AnnounceAs puts session on the roster of url as id, claiming name.
func AnnounceAs(tb testing.TB, url string, id *Ident, name, session string) {
	tb.Helper()
	a := id.Signer.Announce(name, identity.SessionInfo{SessionID: session}, identity.Millis(time.Now()))
	if err := relayClient(url).Announce(context.Background(), a); err != nil {
		tb.Fatal(err)
	}
}

// Post signs m as id, with a fresh msg_id, the current time and kind
// message unless set, and posts it to the route of n.
func Post(tb testing.TB, url string, id *Ident, n *Node, m identity.Message) identity.Message {
	tb.Helper()
	if m.MsgID == "" {
		mid, err := identity.NewMsgID(nil)
		if err != nil {
			tb.Fatal(err)
		}
		m.MsgID = mid
	}
	m.From, m.To = id.Key(), n.ID.Key()
	if m.TS == 0 {
		m.TS = identity.Millis(time.Now())
	}
	if m.Kind == "" {
		m.Kind = identity.KindMessage
	}
	if err := id.Signer.SignMessage(&m); err != nil {
		tb.Fatal(err)
	}
	PostRaw(tb, url, n.A.Route().String(), m)
	return m
}

// PostRaw posts m, as it is, to the route rt of the relay at url.
func PostRaw(tb testing.TB, url, rt string, m identity.Message) {
	tb.Helper()
	p, err := m.MarshalJSON()
	if err != nil {
		tb.Fatal(err)
	}
	if err := relayClient(url).Send(context.Background(), rt, p); err != nil {
		tb.Fatal(err)
	}
}

// SendAs posts a message from id with the reply hint replyTo and text to
// the route of n.
func SendAs(tb testing.TB, url string, id *Ident, replyTo string, n *Node, text string) identity.Message {
	tb.Helper()
	return Post(tb, url, id, n, identity.Message{Text: text, ReplyTo: replyTo})
}

// Knock posts a pairing request from id (session from, claiming name) to
// the session of n.
func Knock(tb testing.TB, url string, id *Ident, from, name string, n *Node) identity.Message {
	tb.Helper()
	reqID, err := identity.NewMsgID(nil)
	if err != nil {
		tb.Fatal(err)
	}
	job, err := pairing.RequestMessage(id.Signer, n.ID.Signer.Public(), n.A.Route(), name, reqID,
		route.New(id.Key(), from), time.Now())
	if err != nil {
		tb.Fatal(err)
	}
	PostRaw(tb, url, job.Route, job.Msg)
	return job.Msg
}
