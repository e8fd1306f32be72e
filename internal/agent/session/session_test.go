package session

import (
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/interlink-go/interlink/internal/codex"
	"github.com/interlink-go/interlink/internal/delivery"
	"github.com/interlink-go/interlink/internal/presence"
	"github.com/interlink-go/interlink/internal/route"
	"github.com/interlink-go/interlink/internal/testutil"
)

// thread is a Codex thread id, which a session id may be.
const thread = "0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"

// config returns a Config on a fresh state root whose Sink counts how
// often it is asked for a sink and records what it was asked with.
func config(t *testing.T) (Config, *sinkCalls) {
	t.Helper()
	calls := &sinkCalls{}
	return Config{
		StateRoot: t.TempDir(),
		Signer:    testutil.Signer(t, 0x5e),
		Name:      "me",
		Cwd:       "/work/here",
		Sink: func(id string, failed *codex.Failed) delivery.Sink {
			calls.n.Add(1)
			calls.mu.Lock()
			calls.ids = append(calls.ids, id)
			calls.failed = append(calls.failed, failed != nil)
			calls.mu.Unlock()
			return &delivery.Memory{}
		},
	}, calls
}

type sinkCalls struct {
	n      atomic.Int32
	mu     sync.Mutex
	ids    []string
	failed []bool
}

// A session is opened with everything it owns: its id and route, its
// files, its presence, and the sink made for it.
func TestOpenGivesTheSessionEverythingItOwns(t *testing.T) {
	cfg, calls := config(t)
	cfg.Summary = "reviewing"
	s, err := Open("s1", cfg)
	if err != nil {
		t.Fatal(err)
	}
	own := cfg.Signer.Public().String()
	if s.ID != "s1" || s.Route != route.New(own, "s1") {
		t.Errorf("id %q route %v, want s1 and %s#s1", s.ID, s.Route, own)
	}
	if s.Mailbox == nil || s.Shown == nil || s.Outbox == nil || s.Pairing == nil || s.Progress == nil ||
		s.Presence == nil || s.Budget == nil || s.Sink == nil {
		t.Fatalf("a part is missing: %+v", s)
	}
	for name, path := range map[string]string{"mailbox": s.Mailbox.Path(), "outbox": s.Outbox.Path(), "pairing": s.Pairing.Path()} {
		if !strings.HasPrefix(path, cfg.StateRoot+"/"+name+"/"+own+"/s1.") {
			t.Errorf("%s file %s is not the session's", name, path)
		}
	}
	if info := s.Presence.Info(); info.SessionID != "s1" || info.Cwd != "/work/here" || info.Summary != "reviewing" {
		t.Errorf("announced %+v", info)
	}
	if calls.n.Load() != 1 || calls.ids[0] != "s1" {
		t.Errorf("sink asked %d times for %v, want once for s1", calls.n.Load(), calls.ids)
	}
}

// Only a Codex thread id can have failed deliveries, whatever the host.
func TestOpenKeepsFailedDeliveriesForThreadsOnly(t *testing.T) {
	for _, tc := range []struct {
		id         string
		wantFailed bool
	}{
		{"s1", false},
		{thread, true},
	} {
		t.Run(tc.id, func(t *testing.T) {
			cfg, calls := config(t)
			s, err := Open(tc.id, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if (s.Failed != nil) != tc.wantFailed || calls.failed[0] != tc.wantFailed {
				t.Errorf("failed store %v, handed to the sink %v; want %v", s.Failed != nil, calls.failed[0], tc.wantFailed)
			}
		})
	}
}

// Without a Sink the session sends no notices.
func TestOpenWithoutSink(t *testing.T) {
	cfg, _ := config(t)
	cfg.Sink = nil
	s, err := Open("s1", cfg)
	if err != nil {
		t.Fatal(err)
	}
	if s.Sink != nil {
		t.Errorf("sink %v, want none", s.Sink)
	}
}

// A binding opens its session once: binding again to the same id gives
// the same session, however many bind at once, and another id is refused.
func TestBindOpensTheSessionOnce(t *testing.T) {
	cfg, calls := config(t)
	b := NewBinding(cfg)
	if b.Session() != nil {
		t.Fatal("a new binding has a session")
	}
	select {
	case <-b.Ready():
		t.Fatal("a new binding is ready")
	default:
	}
	var wg sync.WaitGroup
	got := make([]*Session, 8)
	already := make([]bool, 8)
	for i := range got {
		wg.Go(func() {
			var err error
			if got[i], already[i], err = b.Bind(thread); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	firsts := 0
	for i, s := range got {
		if s != got[0] {
			t.Errorf("bind %d gave another session", i)
		}
		if !already[i] {
			firsts++
		}
	}
	if firsts != 1 || calls.n.Load() != 1 {
		t.Errorf("%d binds opened the session, the sink was made %d times; want 1 and 1", firsts, calls.n.Load())
	}
	select {
	case <-b.Ready():
	default:
		t.Error("bound, but Ready is not closed")
	}
	if b.Session() != got[0] {
		t.Error("Session() is not the bound session")
	}
	if _, _, err := b.Bind("0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5c"); !errors.Is(err, ErrOtherSession) {
		t.Errorf("binding another thread: %v, want ErrOtherSession", err)
	}
	if b.Session() != got[0] {
		t.Error("a refused bind changed the session")
	}
}

// An id that cannot name files is refused and leaves the binding unbound,
// so the right id can still bind it.
func TestBindRefusesAnInvalidID(t *testing.T) {
	cfg, calls := config(t)
	b := NewBinding(cfg)
	for _, id := range []string{"", "..", "a/b", "a\u202eb"} {
		if _, _, err := b.Bind(id); !errors.Is(err, route.ErrInvalidSession) {
			t.Errorf("Bind(%q) = %v, want ErrInvalidSession", id, err)
		}
	}
	if b.Session() != nil || calls.n.Load() != 0 {
		t.Fatal("a refused id bound the session")
	}
	if _, already, err := b.Bind("s1"); err != nil || already {
		t.Errorf("Bind(s1) after the refusals = %v, %v", already, err)
	}
}

// A summary set before binding is announced from the moment the session is
// bound; after that it changes the announcement at once. Too long a
// summary is refused the same way both times.
func TestSummaryBeforeAndAfterBinding(t *testing.T) {
	cfg, _ := config(t)
	b := NewBinding(cfg)
	long := strings.Repeat("x", presence.SummaryLimit+1)
	if _, _, err := b.SetSummary(long); !errors.Is(err, presence.ErrSummaryTooLong) {
		t.Errorf("unbound, too long: %v", err)
	}
	kept, id, err := b.SetSummary("  waiting for the thread  ")
	if err != nil || id != "" {
		t.Fatalf("unbound: %q, %q, %v", kept, id, err)
	}
	s, _, err := b.Bind("s1")
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Presence.Info().Summary; got != kept {
		t.Errorf("announced %q once bound, want %q", got, kept)
	}
	if _, _, err := b.SetSummary(long); !errors.Is(err, presence.ErrSummaryTooLong) {
		t.Errorf("bound, too long: %v", err)
	}
	kept, id, err = b.SetSummary("building")
	if err != nil || id != "s1" || kept != "building" {
		t.Errorf("bound: %q, %q, %v; want building, s1", kept, id, err)
	}
	if got := s.Presence.Info().Summary; got != "building" {
		t.Errorf("announced %q, want building", got)
	}
}
