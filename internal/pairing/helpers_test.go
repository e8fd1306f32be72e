package pairing

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/route"
	"github.com/interlink-go/interlink/internal/testutil"
)

var baseTime = time.UnixMilli(1_700_000_000_000)

// fixture is one identity ("me", session "me-1") with its pairing store in
// a temporary state root.
type fixture struct {
	root    string
	me      *identity.Signer
	meRoute route.Route
	store   *Store
	ob      *memOutbox
}

// memOutbox is an [Outbox] in memory: the messages queued, oldest first.
type memOutbox struct {
	mu     sync.Mutex
	jobs   []Job
	labels []string
	fail   error // returned by Replace when set
}

func (o *memOutbox) Replace(_ context.Context, route, peer, _ string, m identity.Message) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.fail != nil {
		return o.fail
	}
	o.withdraw(m.MsgID)
	o.jobs = append(o.jobs, Job{Route: route, Msg: m})
	o.labels = append(o.labels, peer)
	return nil
}

func (o *memOutbox) Withdraw(_ context.Context, msgID string) (bool, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.withdraw(msgID), nil
}

func (o *memOutbox) withdraw(msgID string) bool {
	i := slices.IndexFunc(o.jobs, func(j Job) bool { return j.Msg.MsgID == msgID })
	if i < 0 {
		return false
	}
	o.jobs = slices.Delete(o.jobs, i, i+1)
	o.labels = slices.Delete(o.labels, i, i+1)
	return true
}

// ids returns the msg_ids queued, oldest first.
func (o *memOutbox) ids() []string {
	var ids []string
	for _, j := range o.jobs {
		ids = append(ids, j.Msg.MsgID)
	}
	return ids
}

// newFixture opens a store for a fresh identity and, on cleanup, checks
// that whatever the test left on disk loads and keeps the documented
// bounds.
func newFixture(tb testing.TB) *fixture {
	tb.Helper()
	f := &fixture{root: tb.TempDir(), me: testutil.NumberedSigner(tb, 1_000_000), ob: &memOutbox{}}
	f.meRoute = route.New(f.me.Public().String(), "me-1")
	f.store = f.open(tb)
	tb.Cleanup(func() { checkInvariants(tb, f.store) })
	return f
}

// open opens another Store on the fixture's file.
func (f *fixture) open(tb testing.TB) *Store {
	tb.Helper()
	s, err := Open(f.root, f.me.Public(), f.meRoute.Session, nil)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

func checkInvariants(tb testing.TB, s *Store) {
	tb.Helper()
	st, err := s.Load()
	if err != nil {
		tb.Errorf("state left behind does not load: %v", err)
		return
	}
	if len(st.Inbound) > InboundCap || len(st.Outbound) > OutboundCap {
		tb.Errorf("state over its bounds: %d inbound, %d outbound", len(st.Inbound), len(st.Outbound))
	}
	for name, list := range map[string][]Request{"inbound": st.Inbound, "outbound": st.Outbound} {
		seen := make(map[string]bool)
		for _, r := range list {
			if seen[r.Key] {
				tb.Errorf("%s holds key %s twice", name, r.Key)
			}
			seen[r.Key] = true
		}
	}
}

// knock returns a pair_request from s to the key to, claiming name, with
// reply_to set to s's session sess (no reply_to when sess is empty).
func knock(tb testing.TB, s *identity.Signer, to identity.PublicKey, name, id, sess string) identity.Message {
	tb.Helper()
	m := identity.Message{
		To: to.String(), Text: name, TS: identity.Millis(baseTime), MsgID: id,
		Kind: identity.KindPairRequest,
	}
	if sess != "" {
		m.ReplyTo = route.New(s.Public().String(), sess).String()
	}
	if err := s.SignMessage(&m); err != nil {
		tb.Fatal(err)
	}
	return m
}

// receive records a knock from s in the fixture's store and returns the
// stored request.
func (f *fixture) receive(tb testing.TB, s *identity.Signer, name, id string) Request {
	tb.Helper()
	m := knock(tb, s, f.me.Public(), name, id, "s-"+id)
	req, err := InboundFromKnock(s.Public(), &m)
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := f.store.Receive(req); err != nil {
		tb.Fatal(err)
	}
	return req
}

// request records an outbound request to target with id and returns the
// stored request.
func (f *fixture) request(tb testing.TB, target *identity.Signer, name, id string, now time.Time) Request {
	tb.Helper()
	targetRoute := route.New(target.Public().String(), "t-1")
	req := Request{Key: target.Public().String(), Name: name, RequestID: id, ReplyTo: targetRoute.String()}
	stored, err := f.store.Request(context.Background(), req, f.ob, func(requestID string) (Job, error) {
		return RequestMessage(f.me, target.Public(), targetRoute, "me", requestID, f.meRoute, now)
	})
	if err != nil {
		tb.Fatal(err)
	}
	return stored
}

// accept builds the confirmation of req.
func (f *fixture) accept(tb testing.TB, req Request, msgID string) Job {
	tb.Helper()
	job, err := AcceptMessage(f.me, req, "me", f.meRoute, baseTime, msgID)
	if err != nil {
		tb.Fatal(err)
	}
	return job
}

func (f *fixture) load(tb testing.TB) State {
	tb.Helper()
	st, err := f.store.Load()
	if err != nil {
		tb.Fatal(err)
	}
	return st
}

func readFile(tb testing.TB, path string) []byte {
	tb.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	return data
}

func writeFile(tb testing.TB, path string, data []byte) {
	tb.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		tb.Fatal(err)
	}
}
