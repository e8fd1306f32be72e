package main

// Process tests of what the bus does with a database file it cannot
// trust: damaged ones end the process with one line on stderr, an empty
// one becomes a new database.

import (
	"crypto/sha256"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	boltstore "github.com/interlink-go/interlink/internal/store/bolt"
)

// exitTimeout bounds how long a bus that should refuse its database may
// take to exit.
const exitTimeout = 10 * time.Second

// writeQueues makes a database at path holding n messages of about 1 KiB
// spread over 40 routes, and returns the ids of its leaf pages and its
// page size.
func writeQueues(t *testing.T, path string, n int) (leaves []int, pageSize int) {
	t.Helper()
	s, err := boltstore.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		env := fmt.Sprintf(`{"payload":%q,"ts":%d}`, strings.Repeat("m", 1000), i)
		if _, _, err := s.Enqueue(fmt.Sprintf("key%02d#s", i%40), []byte(env)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, PreLoadFreelist: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.View(func(tx *bolt.Tx) error {
		for id := 2; ; id++ {
			info, err := tx.Page(id)
			if err != nil || info == nil {
				return err
			}
			if info.Type == "leaf" {
				leaves = append(leaves, id)
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(leaves) < 3 {
		t.Fatalf("only %d leaf pages", len(leaves))
	}
	return leaves, db.Info().PageSize
}

// overwriteAt writes b at off in the file at path.
func overwriteAt(t *testing.T, path string, off int64, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}

// checkOneLine requires the output of a bus that refused its database to
// be one line naming the file and what to do, without a trace of a panic.
func checkOneLine(t *testing.T, out, path, found string) {
	t.Helper()
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) != 1 {
		t.Fatalf("%d lines of output, want 1:\n%s", len(lines), out)
	}
	want := "interlink-bus: database " + path + " " + found + ": "
	if !strings.HasPrefix(lines[0], want) || !strings.Contains(lines[0], "move the file aside") {
		t.Errorf("output %q, want it to start %q and say what to do", lines[0], want)
	}
	for _, bad := range []string{"panic", "goroutine", ".go:"} {
		if strings.Contains(out, bad) {
			t.Errorf("output holds %q:\n%s", bad, out)
		}
	}
}

// fileState is what the bus must not change about a database file it
// refuses.
type fileState struct {
	mode    os.FileMode
	modTime time.Time
	sum     [32]byte
}

func (s fileState) String() string {
	return fmt.Sprintf("mode %v, modified %v, content %x", s.mode, s.modTime.Format(time.RFC3339Nano), s.sum[:8])
}

// readableOld makes the file at path readable by others (0644), with a
// modification time in the past, and returns its state.
func readableOld(t *testing.T, path string) fileState {
	t.Helper()
	old := time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, old, old); err != nil {
		t.Fatal(err)
	}
	return fileStateOf(t, path)
}

// fileStateOf returns the state of the file at path.
func fileStateOf(t *testing.T, path string) fileState {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return fileState{fi.Mode(), fi.ModTime(), sha256.Sum256(data)}
}

// A database cut to half its size, with a zeroed page, or with a garbled
// leaf page makes the bus exit 1 with one line that names the file, says
// what is wrong and what to do; so does a file that is not a database.
// The refused file is left as it was, even when others may read it: the
// bus makes a file private only once it has opened as a database.
func TestDamagedDatabaseExitsWithOneLine(t *testing.T) {
	t.Parallel()
	healthy := filepath.Join(t.TempDir(), "healthy.db")
	leaves, ps := writeQueues(t, healthy, 300)
	fi, err := os.Stat(healthy)
	if err != nil {
		t.Fatal(err)
	}
	leaf := leaves[len(leaves)/2]
	rng := rand.New(rand.NewPCG(1, 2))
	junk := make([]byte, ps-16)
	for i := range junk {
		junk[i] = byte(rng.Uint32())
	}
	cases := []struct {
		name   string
		damage func(path string)
		detail string
	}{
		{"truncated to half", func(p string) {
			if err := os.Truncate(p, fi.Size()/2); err != nil {
				t.Fatal(err)
			}
		}, "cut short"},
		{"zeroed page", func(p string) { overwriteAt(t, p, int64(leaf*ps), make([]byte, ps)) }, fmt.Sprintf("page %d", leaf)},
		{"garbled leaf page", func(p string) { overwriteAt(t, p, int64(leaf*ps+16), junk) }, fmt.Sprintf("page %d", leaf)},
		{"not a database", func(p string) {
			if err := os.WriteFile(p, []byte(strings.Repeat("redb? ", 2000)), 0o600); err != nil {
				t.Fatal(err)
			}
		}, "not a database file"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b, err := os.ReadFile(healthy)
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(t.TempDir(), "bus.db")
			if err := os.WriteFile(path, b, 0o600); err != nil {
				t.Fatal(err)
			}
			tc.damage(path)
			before := readableOld(t, path)
			p := launch(t, busEnv(), "--addr", "127.0.0.1:0", "--db", path)
			if code := p.wait(t, exitTimeout); code != exitError {
				t.Fatalf("exit status %d, want %d:\n%s", code, exitError, p.logs.String())
			}
			if after := fileStateOf(t, path); after != before {
				t.Errorf("the refused file changed: %s; it was %s", after, before)
			}
			out := p.logs.String()
			checkOneLine(t, out, path, "is damaged")
			if !strings.Contains(out, tc.detail) {
				t.Errorf("output does not say %q:\n%s", tc.detail, out)
			}
		})
	}
}

// An empty database file becomes a new database, with a warning that names
// it; what is sent is kept across a restart.
func TestEmptyDatabaseFileStartsNew(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "bus.db")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	p := startBus(t, busEnv(), "--addr", "127.0.0.1:0", "--db", path)
	warned := logLines(p.logs.String(), "database file is empty; starting a new database in it")
	if len(warned) != 1 || !strings.Contains(warned[0], "level=WARN") || !strings.Contains(warned[0], "db="+path) {
		t.Errorf("warning lines %q", warned)
	}
	send(t, p.base, "A", "kept")
	p.stop(t)
	p = startBus(t, busEnv(), "--addr", "127.0.0.1:0", "--db", path)
	if got := drain(t, p.base, "A"); len(got) != 1 || got[0] != `"kept"` {
		t.Errorf("after a restart A holds %q", got)
	}
	if strings.Contains(p.logs.String(), "database file is empty") {
		t.Error("the file was still empty after the first run")
	}
	p.stop(t)
}

// A database file cut short while the bus runs makes the request that
// meets it fail with 500, and the bus exit 1 with one line after its logs,
// not crash.
func TestDatabaseDamagedWhileServing(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("Windows cannot shorten a file that is mapped")
	}
	t.Parallel()
	path := filepath.Join(t.TempDir(), "bus.db")
	_, ps := writeQueues(t, path, 300)
	p := startBus(t, busEnv(), "--addr", "127.0.0.1:0", "--db", path)
	if err := os.Truncate(path, int64(2*ps)); err != nil {
		t.Fatal(err)
	}
	resp, err := httpc.Get(p.base + "/recv?me=key20%23s&timeout_ms=0")
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusInternalServerError {
			t.Errorf("a poll of the cut file answered %d, want 500", resp.StatusCode)
		}
	}
	if code := p.wait(t, exitTimeout); code != exitError {
		t.Fatalf("exit status %d, want %d:\n%s", code, exitError, p.logs.String())
	}
	out := p.logs.String()
	var last string
	for line := range strings.Lines(out) {
		if !strings.HasPrefix(line, "time=") {
			if last != "" {
				t.Errorf("more than one line besides the logs:\n%s", out)
			}
			last = line
		}
	}
	checkOneLine(t, last, path, "was found damaged while serving")
	for _, bad := range []string{"panic", "goroutine", ".go:"} {
		if strings.Contains(out, bad) {
			t.Errorf("output holds %q:\n%s", bad, out)
		}
	}
}
