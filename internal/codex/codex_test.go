package codex

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/protocol"
)

func TestValidThread(t *testing.T) {
	good := []string{"01900000-1234-7000-8000-123456789abc", "ABCDEF01-2345-6789-ABCD-EF0123456789"}
	bad := []string{"", "main", "../thread", "01900000-1234-7000-8000-123456789ab", "01900000-1234-7000-8000-123456789abcd",
		"01900000x1234-7000-8000-123456789abc", "0190000g-1234-7000-8000-123456789abc", "01900000-1234-7000-8000-12345678 abc",
		"{1900000-1234-7000-8000-123456789ab}"}
	for _, g := range good {
		if err := ValidThread(g); err != nil {
			t.Errorf("ValidThread(%q) = %v", g, err)
		}
	}
	for _, b := range bad {
		if err := ValidThread(b); !errors.Is(err, ErrBadThread) {
			t.Errorf("ValidThread(%q) = %v", b, err)
		}
	}
}

func TestLookup(t *testing.T) {
	files := map[string]bool{}
	exists := func(p string) bool { return files[p] }
	found := func(p string) func(string) (string, error) {
		return func(string) (string, error) { return p, nil }
	}
	missing := func(string) (string, error) { return "", errors.New("not found") }
	win := filepath.Join("C:", "npm")
	tests := []struct {
		name, goos string
		look       func(string) (string, error)
		files      []string
		want       string
		err        error
	}{
		{"unix path", "linux", found("/usr/bin/codex"), nil, "/usr/bin/codex", nil},
		{"darwin", "darwin", found("/opt/homebrew/bin/codex"), nil, "/opt/homebrew/bin/codex", nil},
		{"missing", "linux", missing, nil, "", errors.New("")},
		{"windows exe", "windows", found(filepath.Join(win, "codex.exe")), nil, filepath.Join(win, "codex.exe"), nil},
		{"windows cmd shim, exe beside", "windows", found(filepath.Join(win, "codex.cmd")), []string{filepath.Join(win, "codex.exe")}, filepath.Join(win, "codex.exe"), nil},
		{"windows cmd shim, exe in node_modules", "windows", found(filepath.Join(win, "codex.cmd")),
			[]string{filepath.Join(win, "node_modules", "@openai", "codex", "bin", "codex.exe")},
			filepath.Join(win, "node_modules", "@openai", "codex", "bin", "codex.exe"), nil},
		{"windows cmd shim only", "windows", found(filepath.Join(win, "codex.cmd")), nil, "", ErrShim},
		{"windows bat shim only", "windows", found(filepath.Join(win, "codex.BAT")), nil, "", ErrShim},
		{"windows script", "windows", found(filepath.Join(win, "codex.ps1")), nil, "", ErrShim},
	}
	for _, tt := range tests {
		clear(files)
		for _, f := range tt.files {
			files[f] = true
		}
		got, err := Lookup("codex", tt.goos, tt.look, exists)
		switch {
		case tt.err == nil && err != nil, tt.err != nil && err == nil:
			t.Errorf("%s: err = %v, want %v", tt.name, err, tt.err)
		case errors.Is(tt.err, ErrShim) && !errors.Is(err, ErrShim):
			t.Errorf("%s: err = %v, want ErrShim", tt.name, err)
		case got != tt.want:
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
	if !strings.Contains(ErrShim.Error(), "INTERLINK_CODEX_BIN") {
		t.Error("the shim error does not name INTERLINK_CODEX_BIN")
	}
}

func newFailed(t *testing.T) *Failed {
	t.Helper()
	s, err := identity.NewSigner(make([]byte, identity.SeedSize))
	if err != nil {
		t.Fatal(err)
	}
	f, err := OpenFailed(t.TempDir(), s.Public(), "01900000-1234-7000-8000-123456789abc")
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestFailedStore(t *testing.T) {
	f := newFailed(t)
	if es, err := f.List(); err != nil || len(es) != 0 {
		t.Fatalf("empty List = %v, %v", es, err)
	}
	id1, err := f.Save(Entry{MsgID: "m1", Sender: "alice", Text: "t1", Reason: "r"})
	if err != nil || len(id1) != 8 {
		t.Fatalf("Save = %q, %v", id1, err)
	}
	// Same message and sender: not added twice.
	if again, err := f.Save(Entry{MsgID: "m1", Sender: "alice", Text: "other"}); err != nil || again != id1 {
		t.Errorf("duplicate Save = %q, %v", again, err)
	}
	n1, _ := f.Save(Entry{MsgID: "n1", Sender: protocol.SystemSender, Text: "notice 1", Notice: true})
	n2, _ := f.Save(Entry{MsgID: "n2", Sender: protocol.SystemSender, Text: "notice 2", Notice: true})
	es, _ := f.List()
	if len(es) != 2 || es[0].ID != id1 || es[1].ID != n2 {
		t.Errorf("after two notices: %+v (the first notice %s should be replaced)", es, n1)
	}
	if e, err := f.Get(n2); err != nil || e.Text != "notice 2" {
		t.Errorf("Get = %+v, %v", e, err)
	}
	if _, err := f.Get("nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get unknown = %v", err)
	}
	if err := f.ClearNotices(); err != nil {
		t.Fatal(err)
	}
	if es, _ := f.List(); len(es) != 1 || es[0].Notice {
		t.Errorf("after ClearNotices: %+v", es)
	}
	if err := f.Remove("nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Remove unknown = %v", err)
	}
	if err := f.Remove(id1); err != nil {
		t.Fatal(err)
	}
	if es, _ := f.List(); len(es) != 0 {
		t.Errorf("after Remove: %+v", es)
	}
	data, _ := os.ReadFile(f.Path())
	if strings.TrimSpace(string(data)) != "[]" {
		t.Errorf("file = %q", data)
	}
}

func TestFailedCapAndNoticeSlot(t *testing.T) {
	f := newFailed(t)
	for i := range MaxFailed {
		if _, err := f.Save(Entry{MsgID: fmt.Sprint("m", i), Sender: "s"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.Save(Entry{MsgID: "one-more", Sender: "s"}); !errors.Is(err, ErrFull) {
		t.Errorf("Save into a full store = %v", err)
	}
	if _, err := f.Save(Entry{MsgID: "n", Sender: protocol.SystemSender, Notice: true}); !errors.Is(err, ErrFull) {
		t.Errorf("notice into a full store without a notice = %v", err)
	}
	// A notice entry only ever replaces another notice.
	g := newFailed(t)
	for i := range MaxFailed - 1 {
		if _, err := g.Save(Entry{MsgID: fmt.Sprint("m", i), Sender: "s"}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 3 {
		if _, err := g.Save(Entry{MsgID: fmt.Sprint("n", i), Sender: protocol.SystemSender, Notice: true}); err != nil {
			t.Errorf("notice %d: %v", i, err)
		}
	}
}

func TestFailedCorrupt(t *testing.T) {
	f := newFailed(t)
	if err := os.MkdirAll(filepath.Dir(f.Path()), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f.Path(), []byte("{not a list"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := f.List(); !errors.Is(err, ErrCorrupt) {
		t.Errorf("List = %v", err)
	}
	if _, err := f.Save(Entry{MsgID: "m"}); !errors.Is(err, ErrCorrupt) {
		t.Errorf("Save = %v", err)
	}
	data, _ := os.ReadFile(f.Path())
	if string(data) != "{not a list" {
		t.Error("a corrupt file was overwritten")
	}
	// Legacy entries without "notice" load as full-message entries.
	if err := os.WriteFile(f.Path(), []byte(`[{"id":"a","msg_id":"m","sender":"s","text":"t","reason":"r"}]`), 0o600); err != nil {
		t.Fatal(err)
	}
	if es, err := f.List(); err != nil || len(es) != 1 || es[0].Notice {
		t.Errorf("legacy = %+v, %v", es, err)
	}
}

func TestFailedConcurrent(t *testing.T) {
	f := newFailed(t)
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			if _, err := f.Save(Entry{MsgID: fmt.Sprint("m", i), Sender: "s"}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if es, _ := f.List(); len(es) != 20 {
		t.Errorf("%d entries after 20 concurrent saves", len(es))
	}
}
