//go:build unix

package doctor

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/interlink-go/interlink/internal/host"
	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/mailbox"
	"github.com/interlink-go/interlink/internal/statefile"
	"github.com/interlink-go/interlink/internal/testutil"
)

// doctorSetup is a session whose every file doctor reads is valid, with
// the path of each.
type doctorSetup struct {
	cfg   Config
	files map[string]string // what → path
}

func newDoctorSetup(t *testing.T) *doctorSetup {
	t.Helper()
	dir := t.TempDir()
	root := filepath.Join(dir, "state")
	seed := make([]byte, identity.SeedSize)
	seed[0] = 7
	keyPath := filepath.Join(dir, "id.key")
	write := func(path, data string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(keyPath, string(identity.EncodeKeyFile(seed)))
	s, err := identity.NewSigner(seed)
	if err != nil {
		t.Fatal(err)
	}
	own := s.Public()
	peers := filepath.Join(dir, "peers.json")
	write(peers, `{"alice": {"key": "`+testutil.Signer(t, 2).Public().String()+`"}}`)
	mb, err := mailbox.Open(root, own, "s1", nil)
	if err != nil {
		t.Fatal(err)
	}
	write(mb.Path(), `{"records":[],"notice":null}`)
	budgetPath := filepath.Join(root, "budget", own.String(), "s1.json")
	write(budgetPath, `{}`)
	inboxPath := filepath.Join(root, "inbox", "s1.jsonl")
	write(inboxPath, "")
	cursor := filepath.Join(root, "inbox", "s1.cursor")
	write(cursor, "0")
	bin := filepath.Join(dir, "interlink-mcp")
	write(bin, "#!/bin/sh\n")
	plugin := filepath.Join(dir, "plugin")
	write(filepath.Join(plugin, ".mcp.json"), `{"mcpServers":{"interlink":{"command":"`+bin+`"}}}`)
	write(filepath.Join(plugin, "hooks", "hooks.json"), `{"hooks":{}}`)
	settings := filepath.Join(dir, "settings.json")
	write(settings, `{}`)
	codex := filepath.Join(dir, "config.toml")
	write(codex, "[mcp_servers.interlink]\ncommand = \""+bin+"\"\n")
	return &doctorSetup{
		cfg: Config{KeyPath: keyPath, PeersPath: peers, StateRoot: root, Session: "s1", Binary: bin,
			ClaudePluginDir: plugin, ClaudeSettings: settings, CodexConfig: codex, CheckTimeout: time.Hour},
		files: map[string]string{
			"key": keyPath, "peers": peers, "mailbox": mb.Path(), "budgets": budgetPath,
			"listener": inboxPath, "listener cursor": cursor, "claude plugin": filepath.Join(plugin, ".mcp.json"),
			"claude hooks": filepath.Join(plugin, "hooks", "hooks.json"), "claude settings": settings, "codex": codex,
		},
	}
}

// checkOf returns the check id that reports on the file what, and the
// configuration under which doctor reads it.
func (s *doctorSetup) checkOf(what string) (string, Config) {
	cfg := s.cfg
	id, _, _ := strings.Cut(what, " ")
	switch what {
	case "claude settings":
		cfg.ClaudePluginDir = ""
	case "codex":
		cfg.Host = host.Codex
	}
	return id, cfg
}

// runDoctor runs the checks and fails the test if they do not come back.
// The wait is a bound on a test that would otherwise hang, not a measure.
func runDoctor(t *testing.T, cfg Config) []Check {
	t.Helper()
	done := make(chan []Check, 1)
	go func() { done <- Run(t.Context(), cfg) }()
	select {
	case checks := <-done:
		return checks
	case <-time.After(time.Minute):
		t.Fatal("doctor is still waiting on a file after a minute")
		return nil
	}
}

// Every file doctor reads may be replaced by a named pipe without a
// writer (which blocks whoever opens it for reading), a device that never
// ends, or a sparse file past any sane size. doctor reports each, with the
// file and what it is, and finishes; it reads none of them.
func TestDoctorNeverWaitsOnAFile(t *testing.T) {
	kinds := map[string]struct {
		make func(t *testing.T, path string)
		says string
	}{
		"named pipe": {func(t *testing.T, path string) {
			if err := syscall.Mkfifo(path, 0o600); err != nil {
				t.Skipf("no named pipes here: %v", err)
			}
			// A reader the old code left waiting is let go at the end.
			t.Cleanup(func() {
				if f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
					f.Close()
				}
			})
		}, "is a named pipe"},
		"device": {func(t *testing.T, path string) {
			if err := os.Symlink("/dev/zero", path); err != nil {
				t.Fatal(err)
			}
		}, "is a device"},
		"huge file": {func(t *testing.T, path string) {
			f, err := os.Create(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if err := f.Truncate(statefile.MaxFileSize + 1); err != nil {
				t.Fatal(err)
			}
		}, "bytes"},
	}
	for kind, k := range kinds {
		for _, what := range []string{"key", "peers", "mailbox", "budgets", "listener", "listener cursor",
			"claude plugin", "claude hooks", "claude settings", "codex"} {
			t.Run(kind+"/"+what, func(t *testing.T) {
				s := newDoctorSetup(t)
				path := s.files[what]
				if err := os.Remove(path); err != nil {
					t.Fatal(err)
				}
				k.make(t, path)
				id, cfg := s.checkOf(what)
				checks := runDoctor(t, cfg)
				cs := only(checks, id)
				if len(cs) != 1 || cs[0].Status == OK {
					t.Fatalf("%s checks: %+v", id, cs)
				}
				named := strings.Contains(cs[0].Detail, path) || kind == "device" && strings.Contains(cs[0].Detail, "/dev/zero")
				if !named || !strings.Contains(cs[0].Detail, k.says) {
					t.Errorf("%s check: %q does not say %q of %s", id, cs[0].Detail, k.says, path)
				}
			})
		}
	}
}

// A check that does not come back (a file on a stalled network mount
// blocks a read inside the kernel, where nothing can interrupt it) is
// reported at its deadline, and the checks after it still run.
func TestDoctorLeavesACheckBehindAtItsDeadline(t *testing.T) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	var r report
	cfg := Config{CheckTimeout: time.Millisecond}
	v, ok := local(t.Context(), cfg, &r, "peers", "peers.json", "/mnt/stalled/peers.json", func(r *report) int {
		<-release
		r.add("peers", "peers.json", OK, "late", "")
		return 1
	})
	if ok || v != 0 {
		t.Errorf("local = %d, %v; want the zero value and false", v, ok)
	}
	if len(r.checks) != 1 || r.checks[0].Status != Fail || !strings.Contains(r.checks[0].Detail, "no answer within 1ms from /mnt/stalled/peers.json") {
		t.Fatalf("checks: %+v", r.checks)
	}
	cfg.CheckTimeout = time.Hour
	if next, ok := local(t.Context(), cfg, &r, "state", "state folder", "x", func(r *report) int {
		r.add("state", "state folder", OK, "fine", "")
		return 2
	}); !ok || next != 2 || len(r.checks) != 2 || r.checks[1].Detail != "fine" {
		t.Errorf("the next check = %d, %v: %+v", next, ok, r.checks)
	}
}
