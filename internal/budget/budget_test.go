package budget

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/testutil"
)

// clock is a wall clock that moves only when told to.
type clock struct{ t time.Time }

func (c *clock) now() time.Time      { return c.t }
func (c *clock) add(d time.Duration) { c.t = c.t.Add(d) }
func newClock() *clock               { return &clock{t: time.UnixMilli(1_700_000_000_000)} }
func peerOf(tb testing.TB, b byte) Peer {
	return Peer{Key: testutil.Signer(tb, b).Public(), Name: string('a' + rune(b))}
}

func open(t *testing.T, root string, c *clock, wake, send Limit) *Budget {
	t.Helper()
	b, err := Open(root, testutil.Signer(t, 9).Public(), "s1", &Options{Wake: wake, Send: send, Now: c.now})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParseLimit(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Limit
		err  bool
	}{
		{"20/10m", Limit{20, 10 * time.Minute}, false},
		{" 5 / 30s ", Limit{5, 30 * time.Second}, false},
		{"1/24h", Limit{1, 24 * time.Hour}, false},
		{"off", Limit{}, false},
		{"OFF", Limit{}, false},
		{"0/10m", Limit{}, true},
		{"20", Limit{}, true},
		{"20/", Limit{}, true},
		{"x/10m", Limit{}, true},
		{"20/25h", Limit{}, true},
		{"20/100ms", Limit{}, true},
		{"20001/1m", Limit{}, true},
		{"", Limit{}, true},
	} {
		got, err := ParseLimit(tc.in)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("ParseLimit(%q) = %v, %v; want %v, error %v", tc.in, got, err, tc.want, tc.err)
		}
		if err != nil && !errors.Is(err, ErrLimit) {
			t.Errorf("ParseLimit(%q): %v does not wrap ErrLimit", tc.in, err)
		}
		if err == nil {
			if again, err := ParseLimit(got.String()); err != nil || again != got {
				t.Errorf("%v prints as %q, which reads back as %v, %v", got, got.String(), again, err)
			}
		}
	}
	if DefaultWake.String() != "20/10m" || DefaultSend.String() != "30/10m" {
		t.Errorf("defaults print as %s and %s", DefaultWake, DefaultSend)
	}
}

func TestWakeUpsPauseAPeerAtTheLimit(t *testing.T) {
	c := newClock()
	b := open(t, t.TempDir(), c, Limit{3, 10 * time.Minute}, Limit{})
	bob, carol := peerOf(t, 1), peerOf(t, 2)
	for i := range 2 {
		if paused, err := b.Woke(t.Context(), []Peer{bob, carol}); err != nil || len(paused) != 0 {
			t.Fatalf("wake %d: paused %v, %v", i+1, paused, err)
		}
		c.add(time.Second)
	}
	paused, err := b.Woke(t.Context(), []Peer{bob})
	if err != nil || len(paused) != 1 || paused[0] != bob {
		t.Fatalf("third wake by bob: paused %v, %v; want bob", paused, err)
	}
	// Paused once: a later wake-up neither counts nor pauses again.
	if paused, err := b.Woke(t.Context(), []Peer{bob}); err != nil || len(paused) != 0 {
		t.Errorf("a wake of a paused peer: %v, %v", paused, err)
	}
	p, err := b.Paused()
	if err != nil || !p[bob.Key] || p[carol.Key] {
		t.Errorf("Paused = %v, %v; want bob only", p, err)
	}
	st, err := b.Status()
	if err != nil || len(st) != 2 || st[0].Peer.Name != "b" || !st[0].Paused || st[0].Wakes != 3 || st[1].Paused || st[1].Wakes != 2 {
		t.Errorf("Status = %+v, %v", st, err)
	}
}

func TestTheOperatorsTurnResetsBothBudgets(t *testing.T) {
	c := newClock()
	root := t.TempDir()
	b := open(t, root, c, Limit{2, time.Hour}, Limit{2, time.Hour})
	bob := peerOf(t, 1)
	b.Woke(t.Context(), []Peer{bob})
	b.Woke(t.Context(), []Peer{bob})
	for range 2 {
		if err := b.Send(t.Context(), bob, "", ""); err != nil {
			t.Fatal(err)
		}
	}
	var limitErr *SendLimitError
	if err := b.Send(t.Context(), bob, "", ""); !errors.As(err, &limitErr) || limitErr.Peer != "b" || limitErr.Limit.N != 2 {
		t.Fatalf("third send: %v, want a SendLimitError naming b", err)
	}
	if p, _ := b.Paused(); !p[bob.Key] {
		t.Fatal("bob not paused")
	}
	c.add(time.Minute)
	if err := RecordTurn(root, "s1", c.now()); err != nil {
		t.Fatal(err)
	}
	c.add(time.Second)
	if p, _ := b.Paused(); p[bob.Key] {
		t.Error("bob still paused after the operator's turn")
	}
	if err := b.Send(t.Context(), bob, "", ""); err != nil {
		t.Errorf("a send after the operator's turn: %v", err)
	}
	// The pause may come again, with a notice again.
	b.Woke(t.Context(), []Peer{bob})
	if paused, _ := b.Woke(t.Context(), []Peer{bob}); len(paused) != 1 {
		t.Errorf("second pause: %v", paused)
	}
}

func TestTheWindowAloneLetsCountsFall(t *testing.T) {
	c := newClock()
	b := open(t, t.TempDir(), c, Limit{2, 10 * time.Minute}, Limit{1, 10 * time.Minute})
	bob := peerOf(t, 1)
	b.Woke(t.Context(), []Peer{bob})
	b.Woke(t.Context(), []Peer{bob})
	b.Send(t.Context(), bob, "", "")
	if err := b.Send(t.Context(), bob, "", ""); err == nil {
		t.Fatal("second send allowed")
	}
	c.add(10*time.Minute + time.Millisecond)
	if p, _ := b.Paused(); p[bob.Key] {
		t.Error("still paused after the window")
	}
	if err := b.Send(t.Context(), bob, "", ""); err != nil {
		t.Errorf("send after the window: %v", err)
	}
}

func TestCoalescedUpdatesCountOnce(t *testing.T) {
	c := newClock()
	b := open(t, t.TempDir(), c, Limit{}, Limit{3, 10 * time.Minute})
	bob := peerOf(t, 1)
	for i := range 50 {
		if err := b.Send(t.Context(), bob, "t1", identity.StatusUpdate); err != nil {
			t.Fatalf("update %d of one task: %v", i, err)
		}
		c.add(time.Second)
	}
	if err := b.Send(t.Context(), bob, "t2", identity.StatusUpdate); err != nil {
		t.Fatal(err)
	}
	if err := b.Send(t.Context(), bob, "t1", identity.StatusResult); err != nil {
		t.Fatal(err)
	}
	if err := b.Send(t.Context(), bob, "", ""); err == nil {
		t.Error("a fourth counted send was allowed")
	}
}

func TestBudgetsSurviveAReopen(t *testing.T) {
	c := newClock()
	root := t.TempDir()
	bob := peerOf(t, 1)
	first := open(t, root, c, Limit{2, time.Hour}, Limit{})
	first.Woke(t.Context(), []Peer{bob})
	second := open(t, root, c, Limit{2, time.Hour}, Limit{})
	if paused, _ := second.Woke(t.Context(), []Peer{bob}); len(paused) != 1 {
		t.Errorf("the reopened budget did not count the first wake-up: %v", paused)
	}
}

func TestOffCountsNothing(t *testing.T) {
	c := newClock()
	root := t.TempDir()
	b := open(t, root, c, Limit{}, Limit{})
	bob := peerOf(t, 1)
	for range 100 {
		if paused, err := b.Woke(t.Context(), []Peer{bob}); err != nil || len(paused) != 0 {
			t.Fatal(paused, err)
		}
		if err := b.Send(t.Context(), bob, "", ""); err != nil {
			t.Fatal(err)
		}
	}
	if entries, err := os.ReadDir(root); err != nil || len(entries) != 0 {
		t.Errorf("off budgets wrote %v (%v)", entries, err)
	}
}

func TestACorruptFileIsReportedAndKept(t *testing.T) {
	c := newClock()
	b := open(t, t.TempDir(), c, Limit{2, time.Hour}, Limit{2, time.Hour})
	if err := os.MkdirAll(filepath.Dir(b.path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(b.path, []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := b.Send(t.Context(), peerOf(t, 1), "", ""); !errors.Is(err, ErrCorrupt) {
		t.Errorf("Send on a corrupt file: %v", err)
	}
	if data, _ := os.ReadFile(b.path); string(data) != "{not json" {
		t.Errorf("the corrupt file was changed to %q", data)
	}
}

func TestEventsOfTheTurnsMillisecondCameBeforeIt(t *testing.T) {
	c := newClock()
	root := t.TempDir()
	b := open(t, root, c, Limit{}, Limit{1, time.Hour})
	bob := peerOf(t, 1)
	if err := b.Send(t.Context(), bob, "", ""); err != nil {
		t.Fatal(err)
	}
	if err := RecordTurn(root, "s1", c.now()); err != nil {
		t.Fatal(err)
	}
	if err := b.Send(t.Context(), bob, "", ""); err != nil {
		t.Errorf("a send after the turn, in the same millisecond: %v", err)
	}
}
