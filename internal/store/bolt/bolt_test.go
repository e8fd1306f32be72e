package bolt

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	bbolt "go.etcd.io/bbolt"

	"github.com/interlink-go/interlink/internal/store"
	"github.com/interlink-go/interlink/internal/testutil"
)

// reopen closes s and opens its file again with opts.
func reopen(t *testing.T, s *Store, opts *Options) *Store {
	t.Helper()
	path := s.db.Path()
	checkAndClose(t, s)
	return openBolt(t, path, opts)
}

func newBoltPath(t *testing.T) string { return filepath.Join(t.TempDir(), "bus.db") }

type queueState struct {
	Depth  int
	Keys   []string
	Values []string
}

// snapshot reads every entry of the routes from the bucket, removing none.
func snapshot(t *testing.T, s *Store, routes ...string) map[string]queueState {
	t.Helper()
	got := make(map[string]queueState)
	err := s.db.View(func(tx *bbolt.Tx) error {
		for _, r := range routes {
			st := queueState{Depth: depth(t, s, r)}
			c := tx.Bucket(bucketMessages).Cursor()
			p := []byte(store.RoutePrefix(r))
			for k, v := c.Seek(p); k != nil && strings.HasPrefix(string(k), string(p)); k, v = c.Next() {
				st.Keys = append(st.Keys, string(k))
				st.Values = append(st.Values, string(v))
			}
			got[r] = st
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// Payloads, keys, order and depths survive a reopen.
func TestBoltReopenKeepsQueues(t *testing.T) {
	t.Parallel()
	s := openBolt(t, newBoltPath(t), nil)
	for i := range 3 {
		enqueue(t, s, "A#s", "a"+itoa(i))
	}
	for i := range 2 {
		enqueue(t, s, "B#s", "b"+itoa(i))
	}
	before := snapshot(t, s, "A#s", "B#s")
	s = reopen(t, s, nil)
	if diff := cmp.Diff(before, snapshot(t, s, "A#s", "B#s")); diff != "" {
		t.Fatalf("after reopen (-before +after):\n%s", diff)
	}
	keys, values := drain(t, s, "A#s")
	if diff := cmp.Diff(before["A#s"], queueState{Depth: 3, Keys: keys, Values: values}); diff != "" {
		t.Fatalf("drained A (-stored +drained):\n%s", diff)
	}
}

// Deleted entries stay deleted.
func TestBoltAckedStayGone(t *testing.T) {
	t.Parallel()
	s := openBolt(t, newBoltPath(t), nil)
	a, _ := enqueue(t, s, "K#s", "a")
	b, _ := enqueue(t, s, "K#s", "b")
	del(t, s, a)
	s = reopen(t, s, nil)
	wantHead(t, s, "K#s", b, "b")
	del(t, s, b)
	s = reopen(t, s, nil)
	wantEmpty(t, s, "K#s")
}

// The sequence starts at 0 in a new file and continues across reopens.
func TestBoltSequenceContinues(t *testing.T) {
	t.Parallel()
	s := openBolt(t, newBoltPath(t), nil)
	first, _ := enqueue(t, s, "K#s", "0")
	if want := store.Key("K#s", 0); first != want {
		t.Fatalf("first key = %q, want %q", first, want)
	}
	var old []string
	for i := range 3 {
		k, _ := enqueue(t, s, "K#other", itoa(i))
		old = append(old, k)
	}
	del(t, s, old[2]) // the highest sequence is gone, but must not be reused
	s = reopen(t, s, nil)
	k, _ := enqueue(t, s, "K#s", "1")
	if got, want := seqOf(t, k), seqOf(t, old[2])+1; got != want {
		t.Fatalf("sequence after reopen = %d, want %d", got, want)
	}
	if k <= first {
		t.Fatalf("new key %q sorts before old key %q", k, first)
	}
	_, values := drain(t, s, "K#s")
	if diff := cmp.Diff([]string{"0", "1"}, values); diff != "" {
		t.Fatalf("order (-want +got):\n%s", diff)
	}
}

// A cap lowered between runs trims a queue on its next enqueue only.
func TestBoltLowerCapOnReopen(t *testing.T) {
	t.Parallel()
	s := openBolt(t, newBoltPath(t), &Options{Options: store.Options{Cap: 5}})
	for i := range 5 {
		enqueue(t, s, "K#s", itoa(i))
	}
	enqueue(t, s, "K#other", "x")
	s = reopen(t, s, &Options{Options: store.Options{Cap: 2}})
	if n := depth(t, s, "K#s"); n != 5 {
		t.Fatalf("Depth after reopen = %d, want the 5 stored", n)
	}
	wantHead(t, s, "K#s", "", "0")
	_, dropped := enqueue(t, s, "K#s", "5")
	if dropped != 4 {
		t.Fatalf("dropped = %d, want 4", dropped)
	}
	if n := depth(t, s, "K#s"); n != 2 {
		t.Fatalf("Depth = %d, want 2", n)
	}
	wantHead(t, s, "K#s", "", "4")
	if n := depth(t, s, "K#other"); n != 1 {
		t.Fatalf("Depth of an untouched route = %d, want 1", n)
	}
}

func TestBoltFileMode(t *testing.T) {
	t.Parallel()
	path := newBoltPath(t)
	openBolt(t, path, nil)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if perm := fi.Mode().Perm(); perm != 0o600 {
		t.Fatalf("file mode = %v, want 0600", perm)
	}
}

// A second store on the same file fails fast instead of waiting.
func TestBoltLocked(t *testing.T) {
	t.Parallel()
	path := newBoltPath(t)
	openBolt(t, path, nil)
	start := time.Now()
	s, err := Open(path, nil)
	elapsed := time.Since(start)
	if err == nil {
		s.Close()
		t.Fatal("second Open succeeded")
	}
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("second Open: %v, want ErrLocked", err)
	}
	if !strings.Contains(err.Error(), "another process holds the database") || !strings.Contains(err.Error(), path) {
		t.Errorf("error %q should say another process holds %s", err, path)
	}
	if elapsed < lockTimeout/2 || elapsed > lockTimeout+2*time.Second {
		t.Errorf("second Open gave up after %v, want about %v", elapsed, lockTimeout)
	}
}

// The parent directory must exist and is not created.
func TestBoltMissingDirectory(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "missing")
	_, err := Open(filepath.Join(dir, "bus.db"), nil)
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Open in a missing directory: %v, want an error wrapping fs.ErrNotExist", err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the missing directory was created (stat: %v)", err)
	}

	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(filepath.Join(file, "bus.db"), nil); err == nil {
		t.Fatal("Open under a regular file succeeded")
	}
}

func TestBoltNotADatabase(t *testing.T) {
	t.Parallel()
	path := newBoltPath(t)
	if err := os.WriteFile(path, []byte(strings.Repeat("not bolt ", 1000)), 0o600); err != nil {
		t.Fatal(err)
	}
	if s, err := Open(path, nil); err == nil {
		s.Close()
		t.Fatal("Open of a file that is not bbolt succeeded")
	}
}

// The counts rebuilt at open match the data, for routes of many depths,
// including routes emptied by deletes and routes over a lowered cap.
func TestBoltCountsRebuiltAtOpen(t *testing.T) {
	t.Parallel()
	s := openBolt(t, newBoltPath(t), &Options{Options: store.Options{Cap: 8}})
	routes := []string{"", "K", "K#s", "K#s2", "K#s10", "L#s", "M#s"}
	var wg sync.WaitGroup
	for i, r := range routes {
		wg.Go(func() {
			for j := range 3 * i {
				if _, _, err := s.Enqueue(r, fmt.Appendf(nil, "%d", j)); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	drain(t, s, "K#s2")
	e, _ := peek(t, s, "L#s")
	del(t, s, e.Key)
	want := make(map[string]int)
	for _, r := range routes {
		if n := depth(t, s, r); n > 0 {
			want[r] = n
		}
	}
	s = reopen(t, s, &Options{Options: store.Options{Cap: 3}})
	got := make(map[string]int)
	for _, r := range routes {
		if n := depth(t, s, r); n > 0 {
			got[r] = n
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("depths after reopen (-before +after):\n%s", diff)
	}
}

// Concurrent enqueues share commits, and an enqueue that fails in a shared
// transaction makes the others run again on their own. The counts and the
// dropped numbers they report must come from the transactions that
// committed.
func TestBoltConcurrentEnqueuesKeepCountsWhenOneFails(t *testing.T) {
	t.Parallel()
	const (
		capacity   = 8
		goroutines = 24
		each       = 40
	)
	s := openBolt(t, newBoltPath(t), &Options{Options: store.Options{Cap: capacity}})
	// bbolt refuses keys over 32 KiB, so an enqueue to this route fails
	// inside the transaction it shares.
	badRoute := strings.Repeat("x", bbolt.MaxKeySize)

	routes := []string{"A#s", "B#s", "C#s"}
	var mu sync.Mutex
	sent := make(map[string]int)
	dropped := make(map[string]int)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range each {
				if i%7 == g%7 {
					if _, _, err := s.Enqueue(badRoute, []byte("x")); err == nil {
						t.Error("Enqueue with an oversized key succeeded")
					}
					continue
				}
				r := routes[(g+i)%len(routes)]
				_, d, err := s.Enqueue(r, []byte("v"))
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				sent[r]++
				dropped[r] += d
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	for _, r := range routes {
		if want, got := min(capacity, sent[r]), depth(t, s, r); got != want {
			t.Errorf("Depth(%q) = %d, want %d", r, got, want)
		}
		if want := sent[r] - capacity; dropped[r] != want {
			t.Errorf("route %q: %d sent, %d reported dropped, want %d", r, sent[r], dropped[r], want)
		}
	}
	if err := checkInvariants(s); err != nil {
		t.Fatal(err)
	}
}

// Deletes that race enqueues (some of which fail) are acknowledged at once
// and committed with later writes. Some deletes find their key gone (acked
// twice, or trimmed by the cap). The cached counts must still equal a scan,
// Depth must equal the scan less the acknowledged entries, and once the
// acknowledgements are committed every key whose delete returned must be
// gone from the file.
func TestBoltConcurrentDeletesKeepCounts(t *testing.T) {
	t.Parallel()
	const (
		capacity   = 8
		goroutines = 24
		each       = 60
	)
	s := openBolt(t, newBoltPath(t), &Options{Options: store.Options{Cap: capacity}, AckDelay: time.Millisecond})
	badRoute := strings.Repeat("x", bbolt.MaxKeySize)
	routes := []string{"A#s", "B#s", "C#s"}

	var mu sync.Mutex
	var deleted []string
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range each {
				r := routes[(g+i)%len(routes)]
				switch (g + i) % 6 {
				case 0:
					if _, _, err := s.Enqueue(badRoute, []byte("x")); err == nil {
						t.Error("Enqueue with an oversized key succeeded")
					}
				case 1, 2:
					if _, _, err := s.Enqueue(r, []byte("v")); err != nil {
						t.Error(err)
					}
				case 3, 4:
					e, ok, err := s.Peek(r)
					if err != nil {
						t.Error(err)
					}
					if !ok {
						continue
					}
					// Half the time ack twice, as a receiver
					// retrying its ack would.
					for range 1 + i%2 {
						if err := s.Delete(e.Key); err != nil {
							t.Error(err)
						}
					}
					mu.Lock()
					deleted = append(deleted, e.Key)
					mu.Unlock()
				case 5:
					if err := s.Delete(store.Key(r, 1<<40+uint64(g*each+i))); err != nil {
						t.Error(err)
					}
				}
			}
		})
	}
	wg.Wait()
	if err := checkInvariants(s); err != nil {
		t.Fatal(err)
	}
	if err := s.w.flush(); err != nil {
		t.Fatal(err)
	}
	if err := checkInvariants(s); err != nil {
		t.Fatal(err)
	}
	err := s.db.View(func(tx *bbolt.Tx) error {
		msgs := tx.Bucket(bucketMessages)
		for _, k := range deleted {
			if msgs.Get([]byte(k)) != nil {
				t.Errorf("deleted key %q is still stored", k)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(deleted) == 0 {
		t.Fatal("no delete found an entry; the test exercised nothing")
	}
}

// txID returns the ID of the last committed write transaction.
func txID(t testing.TB, s *Store) int {
	t.Helper()
	var id int
	if err := s.db.View(func(tx *bbolt.Tx) error { id = tx.ID(); return nil }); err != nil {
		t.Fatal(err)
	}
	return id
}

// A file whose next_seq is not above its keys (damaged, or written by
// something else) gets next_seq raised at open, so no key is reused, and
// keys the store did not make are ignored.
func TestBoltRepairsNextSeq(t *testing.T) {
	t.Parallel()
	path := newBoltPath(t)
	db, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bbolt.Tx) error {
		msgs, err := tx.CreateBucket(bucketMessages)
		if err != nil {
			return err
		}
		meta, err := tx.CreateBucket(bucketMeta)
		if err != nil {
			return err
		}
		if err := meta.Put(keyNextSeq, binary.BigEndian.AppendUint64(nil, 3)); err != nil {
			return err
		}
		if err := msgs.Put([]byte("junk"), []byte("j")); err != nil {
			return err
		}
		return msgs.Put([]byte(store.Key("K#s", 41)), []byte("old"))
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	s, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if n := depth(t, s, "K#s"); n != 1 {
		t.Fatalf("Depth = %d, want 1", n)
	}
	k, _ := enqueue(t, s, "K#s", "new")
	if got := seqOf(t, k); got != 42 {
		t.Fatalf("new sequence = %d, want 42", got)
	}
	_, values := drain(t, s, "K#s")
	if diff := cmp.Diff([]string{"old", "new"}, values); diff != "" {
		t.Fatalf("order (-want +got):\n%s", diff)
	}
}

func TestBoltDeleteAbsentDoesNotCommit(t *testing.T) {
	t.Parallel()
	s := openBolt(t, newBoltPath(t), nil)
	enqueue(t, s, "K#s", "x")
	stats := s.db.Stats()
	before := stats.TxStats.GetWrite()
	del(t, s, store.Key("K#s", 12345))
	stats = s.db.Stats()
	if after := stats.TxStats.GetWrite(); after != before {
		t.Fatalf("deleting an absent key wrote %d pages", after-before)
	}
}

// An empty file, as a crash right after creating it or a mistaken touch
// leaves, becomes a new database, and the bus says so.
func TestBoltEmptyFileStartsNewDatabase(t *testing.T) {
	t.Parallel()
	path := newBoltPath(t)
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var logs testutil.LockedBuffer
	s := openBolt(t, path, &Options{Options: store.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))}})
	if !strings.Contains(logs.String(), `msg="database file is empty; starting a new database in it" db=`+path) {
		t.Errorf("no warning about the empty file in:\n%s", logs.String())
	}
	enqueue(t, s, "K#s", "one")
	s = reopen(t, s, nil)
	wantHead(t, s, "K#s", "", "one")
}

// A store whose file is cut short while it runs fails the operation that
// finds out with a CorruptError instead of crashing, reports it through
// Failed and Err, and touches the file no more.
func TestBoltFileCutShortWhileOpen(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("Windows cannot shorten a file that is mapped")
	}
	t.Parallel()
	path := newBoltPath(t)
	s, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	for i := range 200 {
		enqueue(t, s, fmt.Sprintf("K#s%d", i), strings.Repeat("x", 500))
	}
	select {
	case <-s.Failed():
		t.Fatal("Failed is closed before anything went wrong")
	default:
	}
	pageSize := s.db.Info().PageSize
	if err := os.Truncate(path, int64(2*pageSize)); err != nil {
		t.Fatal(err)
	}
	_, _, err = s.Peek("K#s150")
	ce, ok := errors.AsType[*CorruptError](err)
	if !ok || ce.Path != path || !strings.Contains(ce.Detail, "peek failed") {
		t.Fatalf("Peek of a cut file: %v, want a *CorruptError for %s", err, path)
	}
	select {
	case <-s.Failed():
	default:
		t.Fatal("Failed is still open")
	}
	if !errors.Is(s.Err(), ErrCorrupt) {
		t.Errorf("Err = %v", s.Err())
	}
	if _, _, err := s.Enqueue("K#s", []byte("y")); err != s.Err() {
		t.Errorf("Enqueue after the failure: %v, want the same error", err)
	}
	if err := s.Delete(store.Key("K#s1", 1)); err != s.Err() {
		t.Errorf("Delete after the failure: %v, want the same error", err)
	}
	if _, err := s.Depth("K#s1"); err != s.Err() {
		t.Errorf("Depth after the failure: %v, want the same error", err)
	}
}

// A write into a file cut short while the store runs fails with a
// CorruptError instead of crashing, and Close then returns that failure
// without touching bbolt, whose locks the failed write may have left held.
func TestBoltWriteToFileCutShortFailsAndCloses(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("Windows cannot shorten a file that is mapped")
	}
	t.Parallel()
	path := newBoltPath(t)
	s, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 200 {
		enqueue(t, s, fmt.Sprintf("K#s%d", i), strings.Repeat("x", 500))
	}
	if err := os.Truncate(path, int64(2*s.db.Info().PageSize)); err != nil {
		t.Fatal(err)
	}
	_, _, err = s.Enqueue("K#s150", []byte("y"))
	if _, ok := errors.AsType[*CorruptError](err); !ok {
		t.Fatalf("Enqueue into a cut file: %v, want a *CorruptError", err)
	}
	select {
	case <-s.Failed():
	default:
		t.Fatal("Failed is still open")
	}
	if err := s.Close(); err != s.Err() {
		t.Fatalf("Close after the failure: %v, want the failure %v", err, s.Err())
	}
}
