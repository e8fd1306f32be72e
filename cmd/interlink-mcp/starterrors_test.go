package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// saysEachThingOnce fails the test when an error line repeats itself: a
// label that the next one starts with again ("inbox: inbox:", "notice
// inbox: inbox:"), a label given twice, or a path named twice. Each layer
// adds its context once.
func saysEachThingOnce(t *testing.T, line string) {
	t.Helper()
	labels := strings.Split(strings.TrimPrefix(line, progName+": "), ": ")
	seen := map[string]bool{}
	for i, l := range labels {
		key := strings.ToLower(strings.TrimSpace(l))
		if seen[key] {
			t.Errorf("%q says %q twice", line, l)
		}
		seen[key] = true
		if i+1 < len(labels) {
			words, next := strings.Fields(key), strings.Fields(strings.ToLower(labels[i+1]))
			if len(words) > 0 && len(next) > 0 && words[len(words)-1] == next[0] {
				t.Errorf("%q stutters: %q then %q", line, l, labels[i+1])
			}
		}
	}
	paths := map[string]int{}
	for _, w := range strings.Fields(line) {
		w = strings.TrimRight(w, ":,;)")
		if len(w) > 1 && strings.ContainsAny(w, `/\`) && strings.ContainsFunc(w, func(r rune) bool { return r != '/' && r != '\\' }) {
			paths[w]++
		}
	}
	for p, n := range paths {
		if n > 1 {
			t.Errorf("%q names %s %d times", line, p, n)
		}
	}
}

// Every way the server can fail to start, for a broken key file,
// peers.json, relay URL, session id or notice inbox, ends with one error
// line that says each thing once: the layer that found the problem and
// the path, not a prefix per wrapping and not the path twice. A notice
// inbox that is a symbolic link is refused, and the file it points at is
// left alone.
func TestStartupErrorsSayEachThingOnce(t *testing.T) {
	home := t.TempDir()
	key, peers := filepath.Join(home, "id.key"), filepath.Join(home, "peers.json")
	var out, errOut bytes.Buffer
	c := &cli{stdout: &out, stderr: &errOut, getenv: func(string) string { return "" }}
	if code := c.run(t.Context(), []string{"keygen", "--out", key}, nil); code != exitOK {
		t.Fatalf("keygen: %d %s", code, errOut.String())
	}
	if err := os.WriteFile(peers, []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(home, "elsewhere.txt")
	if err := os.WriteFile(target, []byte("not the inbox\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	write := func(name, data string) string {
		p := filepath.Join(t.TempDir(), name)
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	type setup struct{ key, peers, state, url, session string }
	cases := []struct {
		name    string
		prepare func(s *setup)
		want    string // in the first line
	}{
		{"notice inbox is a symbolic link", func(s *setup) {
			dir := filepath.Join(s.state, "inbox")
			if err := os.MkdirAll(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(target, filepath.Join(dir, "s1.jsonl")); err != nil {
				t.Skipf("no symbolic links here: %v", err)
			}
		}, "inbox: " + filepath.Join("STATE", "inbox", "s1.jsonl") + " is a symbolic link; refusing to open it"},
		{"state folder is a file", func(s *setup) { s.state = write("state", "") }, "inbox: mkdir"},
		{"key file missing", func(s *setup) { s.key = filepath.Join(home, "none.key") }, "key file"},
		{"key file is a folder", func(s *setup) { s.key = t.TempDir() }, "key file"},
		{"key file too large", func(s *setup) { s.key = write("big.key", strings.Repeat("A", 5000)) }, "larger than"},
		{"peers.json is a folder", func(s *setup) { s.peers = t.TempDir() }, "is a folder"},
		{"peers.json malformed", func(s *setup) { s.peers = write("peers.json", "{") }, "invalid peers.json"},
		{"peers.json with a bad key", func(s *setup) { s.peers = write("peers.json", `{"bob":{"key":"nope"}}`) }, "wrong key length"},
		{"peers.json is a named pipe", func(s *setup) {
			s.peers = filepath.Join(t.TempDir(), "peers.json")
			if err := mkfifo(s.peers); err != nil {
				t.Skip(err)
			}
		}, "named pipe"},
		{"relay URL not http", func(s *setup) { s.url = "ftp://x" }, "use an https:// URL, or http://"},
		{"session id with a slash", func(s *setup) { s.session = "a/b" }, "session id"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := setup{key: key, peers: peers, state: filepath.Join(t.TempDir(), "state"), url: "http://127.0.0.1:1", session: "s1"}
			tc.prepare(&s)
			var out, errOut bytes.Buffer
			c := &cli{stdout: &out, stderr: &errOut, getenv: func(string) string { return "" }}
			code := c.run(t.Context(), []string{"--key", s.key, "--peers", s.peers, "--state-dir", s.state,
				"--url", s.url, "--session", s.session}, strings.NewReader(""))
			if code == exitOK {
				t.Fatalf("the server started:\n%s", errOut.String())
			}
			line, _, _ := strings.Cut(errOut.String(), "\n")
			if want := strings.ReplaceAll(tc.want, "STATE", s.state); !strings.Contains(line, want) {
				t.Errorf("first line %q, want it to contain %q", line, want)
			}
			saysEachThingOnce(t, line)
		})
	}
	if data, err := os.ReadFile(target); err != nil || string(data) != "not the inbox\n" {
		t.Errorf("the file the link pointed at now holds %q (%v)", data, err)
	}
}
