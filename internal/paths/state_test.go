package paths_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/interlink-go/interlink/internal/budget"
	"github.com/interlink-go/interlink/internal/codex"
	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/inbox"
	"github.com/interlink-go/interlink/internal/mailbox"
	"github.com/interlink-go/interlink/internal/outbox"
	"github.com/interlink-go/interlink/internal/pairing"
	"github.com/interlink-go/interlink/internal/paths"
	"github.com/interlink-go/interlink/internal/progress"
	"github.com/interlink-go/interlink/internal/route"
)

// thread is a Codex thread id, which the failed-delivery store also uses as
// its session.
const thread = "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"

func testSigner(t *testing.T) *identity.Signer {
	t.Helper()
	s, err := identity.NewSigner(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// The layout on disk is part of the format other processes and versions
// read: every kind lies where the package documentation says.
func TestStateLayout(t *testing.T) {
	own := testSigner(t).Public()
	root := filepath.FromSlash("/state")
	for _, kind := range []paths.Kind{paths.Mailbox, paths.Outbox, paths.Pairing, paths.Budget, paths.Failed} {
		f, err := paths.SessionFile(root, kind, own, "s1")
		if err != nil {
			t.Fatal(err)
		}
		dir := filepath.Join(root, string(kind), own.String())
		for got, want := range map[string]string{
			f.Path():                      filepath.Join(dir, "s1.json"),
			f.Dir():                       dir,
			f.Lock():                      filepath.Join(dir, "s1.lock"),
			f.Sidecar("notifier-lock"):    filepath.Join(dir, "s1.notifier-lock"),
			f.Sidecar("tombstones.jsonl"): filepath.Join(dir, "s1.tombstones.jsonl"),
		} {
			if got != want {
				t.Errorf("%s: got %s, want %s", kind, got, want)
			}
		}
	}
	for _, kind := range []paths.Kind{paths.Inbox, paths.Turn, paths.Task} {
		got, err := paths.SessionPath(root, kind, "s1")
		if want := filepath.Join(root, string(kind), "s1"); got != want || err != nil {
			t.Errorf("SessionPath(%s) = %s, %v; want %s", kind, got, err, want)
		}
	}
}

// opener opens one kind of session state the way its package does, and
// returns the path of the file it keeps when the package tells it.
type opener struct {
	name string
	open func(root, session string) (path string, err error)
	// want is the file for root and session s1 under the layout; "" when
	// the package does not tell its path (it is then checked by effect).
	want func(root string, own identity.PublicKey) string
}

func openers(t *testing.T) []opener {
	signer := testSigner(t)
	own := signer.Public()
	keyed := func(kind string) func(string, identity.PublicKey) string {
		return func(root string, own identity.PublicKey) string {
			return filepath.Join(root, kind, own.String(), "s1.json")
		}
	}
	return []opener{
		{"mailbox", func(root, s string) (string, error) {
			m, err := mailbox.Open(root, own, s, nil)
			if err != nil {
				return "", err
			}
			return m.Path(), nil
		}, keyed("mailbox")},
		{"outbox", func(root, s string) (string, error) {
			o, err := outbox.Open(root, own, s, nil, signer, nil)
			if err != nil {
				return "", err
			}
			return o.Path(), nil
		}, keyed("outbox")},
		{"pairing", func(root, s string) (string, error) {
			p, err := pairing.Open(root, own, s, nil)
			if err != nil {
				return "", err
			}
			return p.Path(), nil
		}, keyed("pairing")},
		{"budget", func(root, s string) (string, error) {
			b, err := budget.Open(root, own, s, nil)
			if err != nil {
				return "", err
			}
			_, err = b.Woke(t.Context(), []budget.Peer{{Key: own, Name: "self"}})
			return "", err
		}, keyed("budget")},
		{"turn", func(root, s string) (string, error) {
			return "", budget.RecordTurn(root, s, time.Now())
		}, func(root string, _ identity.PublicKey) string { return filepath.Join(root, "turn", "s1") }},
		{"inbox", func(root, s string) (string, error) {
			b, err := inbox.Open(root, s)
			if err != nil {
				return "", err
			}
			return b.Path(), nil
		}, func(root string, _ identity.PublicKey) string { return filepath.Join(root, "inbox", "s1.jsonl") }},
		{"task", func(root, s string) (string, error) {
			m, err := progress.Open(root, s, nil)
			if err != nil {
				return "", err
			}
			return "", m.Inbound("t-1", "", "alice")
		}, func(root string, _ identity.PublicKey) string {
			return filepath.Join(root, "task", "s1", "current-task.json")
		}},
	}
}

// Every package that keeps a session's state opens it under the one layout,
// with the same checks: an empty state root, which would put the state in
// the working folder, and a session id that is no file name are refused
// before anything is written.
func TestEveryStateOpenerUsesTheLayoutAndItsChecks(t *testing.T) {
	for _, o := range openers(t) {
		t.Run(o.name, func(t *testing.T) {
			root := t.TempDir()
			got, err := o.open(root, "s1")
			if err != nil {
				t.Fatal(err)
			}
			want := o.want(root, testSigner(t).Public())
			if got != "" && got != want {
				t.Errorf("path = %s, want %s", got, want)
			}
			if got == "" {
				if _, err := os.Stat(want); err != nil {
					t.Errorf("nothing written at %s: %v", want, err)
				}
			}

			// An empty root, run from a folder that must stay empty.
			wd := t.TempDir()
			t.Chdir(wd)
			if _, err := o.open("", "s1"); !errors.Is(err, paths.ErrNoStateRoot) {
				t.Errorf("empty state root: err = %v, want ErrNoStateRoot", err)
			}
			if entries, _ := os.ReadDir(wd); len(entries) != 0 {
				t.Errorf("an empty state root wrote %s in the working folder", entries[0].Name())
			}
			for _, bad := range []string{"..", "a/b", ""} {
				if _, err := o.open(root, bad); !errors.Is(err, route.ErrInvalidSession) {
					t.Errorf("session %q: err = %v, want ErrInvalidSession", bad, err)
				}
			}
		})
	}
}

// The failed-delivery store of a Codex thread lies under the layout too,
// and refuses an empty state root.
func TestFailedDeliveriesUseTheLayout(t *testing.T) {
	own := testSigner(t).Public()
	root := t.TempDir()
	f, err := codex.OpenFailed(root, own, thread)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(root, "failed", own.String(), thread+".json"); f.Path() != want {
		t.Errorf("path = %s, want %s", f.Path(), want)
	}
	if _, err := codex.OpenFailed("", own, thread); !errors.Is(err, paths.ErrNoStateRoot) {
		t.Errorf("empty state root: err = %v, want ErrNoStateRoot", err)
	}
}
