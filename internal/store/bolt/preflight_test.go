package bolt

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	bbolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/interlink-go/interlink/internal/store"
)

// checkPath runs checkFile on the file at path.
func checkPath(tb testing.TB, path string) error {
	tb.Helper()
	f, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		tb.Fatal(err)
	}
	return checkFile(f, fi.Size())
}

// fillStore writes a queue history through a Bolt: many routes, values
// from a few bytes to a few hundred KiB (which take overflow pages), acks,
// and reopens, so the file has branch pages, freed pages and a freelist.
func fillStore(tb testing.TB, path string, seed uint64) {
	tb.Helper()
	rng := rand.New(rand.NewPCG(seed, 1))
	s, err := Open(path, &Options{Options: store.Options{Cap: 40}})
	if err != nil {
		tb.Fatal(err)
	}
	// The file's layout does not depend on syncing; the test's speed does.
	s.db.NoSync = true
	for round := range 3 {
		for i := range 250 {
			route := fmt.Sprintf("key%02d#session-%d", rng.IntN(30), round)
			size := 10 + rng.IntN(2000)
			if i%100 == 0 {
				size = 20_000 + rng.IntN(40_000)
			}
			if _, _, err := s.Enqueue(route, bytes.Repeat([]byte{'a' + byte(i%26)}, size)); err != nil {
				tb.Fatal(err)
			}
			if rng.IntN(3) == 0 {
				if e, ok, err := s.Peek(route); err != nil {
					tb.Fatal(err)
				} else if ok {
					if err := s.Delete(e.Key); err != nil {
						tb.Fatal(err)
					}
				}
			}
		}
		if err := s.Close(); err != nil {
			tb.Fatal(err)
		}
		if s, err = Open(path, &Options{Options: store.Options{Cap: 40}}); err != nil {
			tb.Fatalf("reopen after round %d: %v", round, err)
		}
		s.db.NoSync = true
	}
	if err := s.Close(); err != nil {
		tb.Fatal(err)
	}
}

// fillRaw writes nested buckets, inline buckets, deleted buckets and large
// values straight through bbolt, with the given page size.
func fillRaw(tb testing.TB, path string, pageSize int, seed uint64) {
	tb.Helper()
	rng := rand.New(rand.NewPCG(seed, 2))
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{PageSize: pageSize, NoSync: true})
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	for round := range 20 {
		err := db.Update(func(tx *bbolt.Tx) error {
			top, err := tx.CreateBucketIfNotExists([]byte("top" + strconv.Itoa(round%4)))
			if err != nil {
				return err
			}
			for i := range 50 {
				sub, err := top.CreateBucketIfNotExists([]byte("sub" + strconv.Itoa(rng.IntN(10))))
				if err != nil {
					return err
				}
				if i%7 == 0 {
					if _, err := sub.CreateBucketIfNotExists([]byte("tiny")); err != nil {
						return err
					}
				}
				size := rng.IntN(300)
				if i == 0 {
					size = 50_000
				}
				if err := sub.Put([]byte(fmt.Sprintf("k%06d", rng.IntN(5000))), make([]byte, size)); err != nil {
					return err
				}
			}
			if round%5 == 4 {
				if err := top.DeleteBucket([]byte("sub3")); err != nil && !errors.Is(err, berrors.ErrBucketNotFound) {
					return err
				}
			}
			return nil
		})
		if err != nil {
			tb.Fatal(err)
		}
	}
}

// TestCheckAcceptsHealthyFiles: files bbolt wrote, through the store or
// directly with other page sizes, nested and inline buckets, pass.
func TestCheckAcceptsHealthyFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fresh := filepath.Join(dir, "fresh.db")
	openBolt(t, fresh, nil).Close()
	if err := checkPath(t, fresh); err != nil {
		t.Errorf("a new store's file: %v", err)
	}
	for seed := range uint64(3) {
		path := filepath.Join(dir, fmt.Sprintf("store%d.db", seed))
		fillStore(t, path, seed)
		if err := checkPath(t, path); err != nil {
			t.Errorf("store history %d: %v", seed, err)
		}
	}
	for _, ps := range []int{1024, 4096, 16384, 65536} {
		path := filepath.Join(dir, fmt.Sprintf("raw%d.db", ps))
		fillRaw(t, path, ps, uint64(ps))
		if err := checkPath(t, path); err != nil {
			t.Errorf("page size %d: %v", ps, err)
		}
	}
}

// pageInfo describes one page of a bbolt file, as bbolt reports it.
type pageInfo struct {
	id   int
	typ  string
	over int
}

// pagesOf lists the pages of the file at path.
func pagesOf(tb testing.TB, path string) (pages []pageInfo, pageSize int) {
	tb.Helper()
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true, PreLoadFreelist: true})
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	err = db.View(func(tx *bbolt.Tx) error {
		for id := 0; ; id++ {
			info, err := tx.Page(id)
			if err != nil {
				return err
			}
			if info == nil {
				return nil
			}
			pages = append(pages, pageInfo{id: info.ID, typ: info.Type, over: info.OverflowCount})
		}
	})
	if err != nil {
		tb.Fatal(err)
	}
	return pages, db.Info().PageSize
}

// firstPage returns the first page of type typ.
func firstPage(tb testing.TB, pages []pageInfo, typ string) int {
	tb.Helper()
	for _, p := range pages {
		if p.typ == typ {
			return p.id
		}
	}
	tb.Fatalf("no %s page", typ)
	return 0
}

// copyFile copies src to a new file in dir and returns its path.
func copyFile(tb testing.TB, src, dir, name string) string {
	tb.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		tb.Fatal(err)
	}
	dst := filepath.Join(dir, name)
	if err := os.WriteFile(dst, b, 0o600); err != nil {
		tb.Fatal(err)
	}
	return dst
}

// overwrite writes b at offset off of the file at path.
func overwrite(tb testing.TB, path string, off int64, b []byte) {
	tb.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(b, off); err != nil {
		tb.Fatal(err)
	}
}

// garbage returns n bytes from a fixed seed.
func garbage(n int, seed uint64) []byte {
	rng := rand.New(rand.NewPCG(seed, 3))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

// TestOpenBoltRefusesDamagedFiles: each kind of damage makes Open
// return a CorruptError naming the file and what is wrong with it; nothing
// panics. The file is left exactly as it was, even one that other users
// may read: same mode, same content, same modification time.
func TestOpenBoltRefusesDamagedFiles(t *testing.T) {
	t.Parallel()
	healthy := filepath.Join(t.TempDir(), "healthy.db")
	fillStore(t, healthy, 7)
	pages, ps := pagesOf(t, healthy)
	fi, err := os.Stat(healthy)
	if err != nil {
		t.Fatal(err)
	}
	leaf, branch, freelist := firstPage(t, pages, "leaf"), firstPage(t, pages, "branch"), firstPage(t, pages, "freelist")
	cases := []struct {
		name   string
		damage func(path string)
		detail string
	}{
		{"truncated to half", func(p string) { os.Truncate(p, fi.Size()/2) }, "cut short"},
		{"truncated to one page", func(p string) { os.Truncate(p, int64(ps)) }, "less than the two header pages"},
		{"zeroed leaf page", func(p string) { overwrite(t, p, int64(leaf*ps), make([]byte, ps)) }, "header names page 0"},
		{"zeroed branch page", func(p string) { overwrite(t, p, int64(branch*ps), make([]byte, ps)) }, "header names page 0"},
		{"garbled leaf page", func(p string) { overwrite(t, p, int64(leaf*ps+16), garbage(ps-16, 1)) }, fmt.Sprintf("page %d", leaf)},
		{"garbled leaf page header", func(p string) { overwrite(t, p, int64(leaf*ps), garbage(ps, 2)) }, "page"},
		{"garbled branch page", func(p string) { overwrite(t, p, int64(branch*ps+16), garbage(ps-16, 3)) }, "page"},
		{"garbled freelist", func(p string) { overwrite(t, p, int64(freelist*ps+16), garbage(ps-16, 4)) }, "freelist"},
		{"freelist count garbled", func(p string) { overwrite(t, p, int64(freelist*ps+10), []byte{0xff, 0xff}) }, "freelist"},
		{"both headers zeroed", func(p string) {
			overwrite(t, p, 0, make([]byte, ps))
			overwrite(t, p, int64(ps), make([]byte, ps))
		}, "not a database file"},
		{"not a database", func(p string) { os.WriteFile(p, []byte(strings.Repeat("not bolt ", 1000)), 0o600) }, "not a database file"},
		{"three bytes", func(p string) { os.WriteFile(p, []byte("abc"), 0o600) }, "not a database file"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := copyFile(t, healthy, t.TempDir(), "bus.db")
			tc.damage(path)
			before := fileState(t, path)
			s, err := Open(path, nil)
			if err == nil {
				s.Close()
				t.Fatal("Open succeeded")
			}
			if after := readState(t, path); after != before {
				t.Errorf("the refused file changed: %v; it was %v", after, before)
			}
			ce, ok := errors.AsType[*CorruptError](err)
			if !ok || !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v (%T), want a *CorruptError", err, err)
			}
			if ce.Path != path || !strings.Contains(ce.Detail, tc.detail) {
				t.Errorf("case %d: path %q detail %q, want %q and a detail with %q", i, ce.Path, ce.Detail, path, tc.detail)
			}
			if !strings.Contains(err.Error(), path) {
				t.Errorf("error %q does not name the file", err)
			}
		})
	}
}

// state is what must not change about a file a store refuses.
type state struct {
	mode    os.FileMode
	modTime time.Time
	sum     [32]byte
}

func (s state) String() string {
	return fmt.Sprintf("mode %v, modified %v, content %x", s.mode, s.modTime.Format(time.RFC3339Nano), s.sum[:8])
}

// fileState makes the file at path readable by others (0644) with a
// modification time in the past, and returns its state.
func fileState(t *testing.T, path string) state {
	t.Helper()
	old := time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, old, old); err != nil {
		t.Fatal(err)
	}
	return readState(t, path)
}

// readState returns the state of the file at path.
func readState(t *testing.T, path string) state {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return state{fi.Mode(), fi.ModTime(), sha256.Sum256(data)}
}

// readAll opens path with Open and, if that succeeds, reads every key
// and value of every bucket, runs bbolt's own consistency check (unless
// check is false), and writes and reads a message. It fails the test if
// the file opened but bbolt then finds anything wrong.
func readAll(tb testing.TB, path string, check bool) (opened bool) {
	tb.Helper()
	s, err := Open(path, nil)
	if err != nil {
		if _, ok := errors.AsType[*CorruptError](err); !ok {
			tb.Fatalf("Open: %v, want nil or a *CorruptError", err)
		}
		return false
	}
	defer s.Close()
	s.db.NoSync = true
	err = s.db.View(func(tx *bbolt.Tx) error {
		var sum int
		err := tx.ForEach(func(name []byte, b *bbolt.Bucket) error {
			return b.ForEach(func(k, v []byte) error {
				sum += len(k) + len(v)
				return nil
			})
		})
		if err != nil {
			return err
		}
		if !check {
			return nil
		}
		for err := range tx.Check() {
			return err
		}
		return nil
	})
	if err != nil {
		tb.Fatalf("the file opened, but reading it failed: %v", err)
	}
	if _, _, err := s.Enqueue("after#check", []byte(`{"payload":1,"ts":1}`)); err != nil {
		tb.Fatalf("the file opened, but a write failed: %v", err)
	}
	if _, ok, err := s.Peek("after#check"); err != nil || !ok {
		tb.Fatalf("the file opened, but a read failed: %v %v", ok, err)
	}
	return true
}

// TestEveryDamagedPageRefusedOrHarmless: zeroing or garbling any single
// page either makes Open refuse the file, or leaves a file bbolt reads
// and writes without complaint (a free page, one header page while the
// other is intact, or the data in a page's overflow).
func TestEveryDamagedPageRefusedOrHarmless(t *testing.T) {
	t.Parallel()
	healthy := filepath.Join(t.TempDir(), "healthy.db")
	fillStore(t, healthy, 11)
	pages, ps := pagesOf(t, healthy)
	// The pages after a page with overflow hold the rest of its data and
	// have no header: damage there may or may not be visible.
	// Of those, only the first of each run is damaged here.
	continued := map[int]bool{}
	var damage []pageInfo
	for i := 0; i < len(pages); i++ {
		p := pages[i]
		damage = append(damage, p)
		if p.typ != "free" && p.over > 0 && i+1 < len(pages) {
			continued[p.id+1] = true
			damage = append(damage, pages[i+1])
			i += p.over
		}
	}
	refused := 0
	for _, p := range damage {
		for _, kind := range []string{"zeroed", "garbled"} {
			t.Run(fmt.Sprintf("%s %d %s", p.typ, p.id, kind), func(t *testing.T) {
				path := copyFile(t, healthy, t.TempDir(), "bus.db")
				b := make([]byte, ps)
				if kind == "garbled" {
					b = garbage(ps, uint64(p.id))
				}
				overwrite(t, path, int64(p.id*ps), b)
				// bbolt opens a file with one damaged header page, as it
				// must after a crash while writing it, but its own check
				// still complains about that page.
				opened := readAll(t, path, p.id > 1)
				if !opened {
					refused++
				}
				if opened && p.typ != "free" && p.id > 1 && !continued[p.id] {
					t.Errorf("%s page %d was %s and the file still opened", p.typ, p.id, kind)
				}
			})
		}
	}
	if refused == 0 {
		t.Fatal("no damage was refused")
	}
}

// FuzzOpenBolt: whatever the file holds, Open returns a store or an
// error and never crashes, and a store it returns can be read in full,
// written, and opened again.
func FuzzOpenBolt(f *testing.F) {
	// The seed is a store's file with small pages, so that it is small and
	// the fuzzer's mutations often hit structure.
	seed := filepath.Join(f.TempDir(), "seed.db")
	db, err := bbolt.Open(seed, 0o600, &bbolt.Options{PageSize: 1024})
	if err != nil {
		f.Fatal(err)
	}
	if err := db.Close(); err != nil {
		f.Fatal(err)
	}
	s, err := Open(seed, nil)
	if err != nil {
		f.Fatal(err)
	}
	for i := range 12 {
		if _, _, err := s.Enqueue(fmt.Sprintf("K#s%d", i%3), bytes.Repeat([]byte{'m'}, 10+i*15)); err != nil {
			f.Fatal(err)
		}
	}
	if _, _, err := s.Enqueue("K#big", bytes.Repeat([]byte{'b'}, 1500)); err != nil {
		f.Fatal(err)
	}
	if err := s.Close(); err != nil {
		f.Fatal(err)
	}
	b, err := os.ReadFile(seed)
	if err != nil {
		f.Fatal(err)
	}
	// bbolt grows a file ahead of its pages; the seed keeps only the pages
	// in use, so that mutations land on structure.
	m0, m1 := parseMeta(b), parseMeta(b[1024:])
	if m1.txid > m0.txid {
		m0 = m1
	}
	if !m0.valid || m0.pageSize != 1024 {
		f.Fatalf("seed header: %+v", m0)
	}
	f.Add(b[:m0.hwm*1024])
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "bus.db")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		if readAll(t, path, false) && !readAll(t, path, false) {
			t.Fatal("a file that opened did not open again after a write")
		}
	})
}
