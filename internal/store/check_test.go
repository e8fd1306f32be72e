package store

import (
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	bolt "go.etcd.io/bbolt"

	"github.com/interlink-go/interlink/internal/store/natstest"
)

// forEachStore runs f once against each implementation. open returns a new,
// empty store that is checked for broken invariants and closed when the test
// ends (unless the test closed it).
func forEachStore(t *testing.T, f func(t *testing.T, open func(opts *Options) Store)) {
	t.Helper()
	t.Run("memory", func(t *testing.T) {
		t.Parallel()
		f(t, func(opts *Options) Store { return openMemory(t, opts) })
	})
	t.Run("bolt", func(t *testing.T) {
		t.Parallel()
		f(t, func(opts *Options) Store { return openBolt(t, filepath.Join(t.TempDir(), "bus.db"), opts) })
	})
	t.Run("nats", func(t *testing.T) {
		t.Parallel()
		srv := natstest.Start(t, nil)
		f(t, func(opts *Options) Store { return openNATS(t, srv, opts) })
	})
}

// openMemory returns a new Memory that is checked and closed at cleanup.
func openMemory(tb testing.TB, opts *Options) *Memory {
	tb.Helper()
	m := NewMemory(opts)
	tb.Cleanup(func() { checkAndClose(tb, m) })
	return m
}

// openBolt opens path and checks and closes the store at cleanup.
func openBolt(tb testing.TB, path string, opts *Options) *Bolt {
	tb.Helper()
	s, err := OpenBolt(path, opts)
	if err != nil {
		tb.Fatalf("OpenBolt: %v", err)
	}
	tb.Cleanup(func() { checkAndClose(tb, s) })
	return s
}

type checker interface {
	Store
	check() error
}

func checkAndClose(tb testing.TB, s checker) {
	tb.Helper()
	if err := s.check(); err != nil {
		tb.Errorf("store invariants: %v", err)
	}
	if err := s.Close(); err != nil && !errors.Is(err, ErrClosed) {
		tb.Errorf("Close: %v", err)
	}
}

// check verifies that every queue is non-empty and within the cap and the
// per-route bytes, that its keys are well formed, sorted and below the next
// sequence, that slots before the head hold nothing, and that the counted
// bytes are those held and within the total. A closed store passes.
func (m *Memory) check() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil
	}
	var total int64
	for route, q := range m.queues {
		if q == nil || q.len() == 0 {
			return fmt.Errorf("route %q: empty queue left in the map", route)
		}
		if q.len() > m.cap {
			return fmt.Errorf("route %q: depth %d over cap %d", route, q.len(), m.cap)
		}
		var size int64
		for _, e := range q.entries[q.head:] {
			size += EntrySize(route, len(e.value))
		}
		if size != q.bytes {
			return fmt.Errorf("route %q: holds %d bytes, counted %d", route, size, q.bytes)
		}
		if size > m.routeBytes {
			return fmt.Errorf("route %q: %d bytes over the route bound of %d", route, size, m.routeBytes)
		}
		total += size
		for i, e := range q.entries[:q.head] {
			if e.key != "" || e.value != nil {
				return fmt.Errorf("route %q: slot %d before the head not cleared", route, i)
			}
		}
		var prev uint64
		for i, e := range q.entries[q.head:] {
			if e.key != Key(route, e.seq) {
				return fmt.Errorf("route %q: entry %d has key %q for sequence %d", route, i, e.key, e.seq)
			}
			if i > 0 && e.seq <= prev {
				return fmt.Errorf("route %q: sequence %d after %d", route, e.seq, prev)
			}
			if e.seq >= m.next {
				return fmt.Errorf("route %q: sequence %d not below next %d", route, e.seq, m.next)
			}
			prev = e.seq
		}
	}
	if total != m.bytes {
		return fmt.Errorf("queues hold %d bytes, counted %d", total, m.bytes)
	}
	if total > m.totalBytes {
		return fmt.Errorf("%d bytes held, over the total bound of %d", total, m.totalBytes)
	}
	return nil
}

// check commits the acknowledgements waiting, then verifies, by a full scan,
// that every key is well formed and below next_seq and that the cached
// counts and sizes equal those of the stored entries. The bounds are not
// checked: bounds lowered since the entries were stored are enforced
// lazily. Nothing may write while it runs.
func (s *Bolt) check() error {
	if s.closed.Load() || s.failure.Load() != nil {
		return nil
	}
	if err := s.flush(); err != nil {
		return err
	}
	s.mu.RLock()
	waiting := len(s.acked) + len(s.ackedN) + int(s.ackedBytes)
	s.mu.RUnlock()
	if waiting != 0 {
		return fmt.Errorf("acknowledgements still waiting after a flush")
	}
	scanned, err := s.scanCounts()
	if err != nil {
		return err
	}
	s.mu.RLock()
	cached, total := maps.Clone(s.counts.committed), s.counts.bytes()
	s.mu.RUnlock()
	if !maps.Equal(scanned, cached) {
		return fmt.Errorf("cached counts differ from the data (-scanned +cached):\n%s",
			cmp.Diff(scanned, cached, cmp.AllowUnexported(routeSize{})))
	}
	var sum int64
	for _, rs := range scanned {
		sum += rs.bytes
	}
	if sum != total {
		return fmt.Errorf("cached total of %d bytes, the data holds %d", total, sum)
	}
	return nil
}

// scanCounts counts the entries of every route, and their sizes, by
// reading every key.
func (s *Bolt) scanCounts() (map[string]routeSize, error) {
	counts := make(map[string]routeSize)
	err := s.db.View(func(tx *bolt.Tx) error {
		next, err := readNextSeq(tx.Bucket(bucketMeta))
		if err != nil {
			return err
		}
		return tx.Bucket(bucketMessages).ForEach(func(k, v []byte) error {
			route, seq, ok := splitKey(string(k))
			if !ok || Key(route, seq) != string(k) {
				return fmt.Errorf("malformed key %q", k)
			}
			if seq >= next {
				return fmt.Errorf("key %q not below next_seq %d", k, next)
			}
			rs := counts[route]
			counts[route] = routeSize{rs.n + 1, rs.bytes + EntrySize(route, len(v))}
			return nil
		})
	})
	return counts, err
}

func enqueue(tb testing.TB, s Store, route, value string) (key string, dropped int) {
	tb.Helper()
	key, dropped, err := s.Enqueue(route, []byte(value))
	if err != nil {
		tb.Fatalf("Enqueue(%q): %v", route, err)
	}
	if !HasRoute(key, route) {
		tb.Fatalf("Enqueue(%q) returned key %q of another route", route, key)
	}
	return key, dropped
}

func peek(tb testing.TB, s Store, route string) (Entry, bool) {
	tb.Helper()
	e, ok, err := s.Peek(route)
	if err != nil {
		tb.Fatalf("Peek(%q): %v", route, err)
	}
	return e, ok
}

func del(tb testing.TB, s Store, key string) {
	tb.Helper()
	if err := s.Delete(key); err != nil {
		tb.Fatalf("Delete(%q): %v", key, err)
	}
}

func depth(tb testing.TB, s Store, route string) int {
	tb.Helper()
	n, err := s.Depth(route)
	if err != nil {
		tb.Fatalf("Depth(%q): %v", route, err)
	}
	return n
}

// wantHead fails unless route's oldest entry has this value (and key, when
// key is not empty).
func wantHead(tb testing.TB, s Store, route, key, value string) {
	tb.Helper()
	e, ok := peek(tb, s, route)
	switch {
	case !ok:
		tb.Fatalf("Peek(%q): empty, want %q", route, value)
	case string(e.Value) != value:
		tb.Fatalf("Peek(%q) = %q, want %q", route, e.Value, value)
	case key != "" && e.Key != key:
		tb.Fatalf("Peek(%q) key = %q, want %q", route, e.Key, key)
	}
}

func wantEmpty(tb testing.TB, s Store, route string) {
	tb.Helper()
	if e, ok := peek(tb, s, route); ok {
		tb.Fatalf("Peek(%q) = %q, want empty", route, e.Value)
	}
	if n := depth(tb, s, route); n != 0 {
		tb.Fatalf("Depth(%q) = %d, want 0", route, n)
	}
}

// drain peeks and deletes until route is empty and returns the values.
func drain(tb testing.TB, s Store, route string) (keys, values []string) {
	tb.Helper()
	for {
		e, ok := peek(tb, s, route)
		if !ok {
			return keys, values
		}
		keys, values = append(keys, e.Key), append(values, string(e.Value))
		del(tb, s, e.Key)
	}
}

func seqOf(tb testing.TB, key string) uint64 {
	tb.Helper()
	_, seq, ok := splitKey(key)
	if !ok {
		tb.Fatalf("malformed key %q", key)
	}
	return seq
}

func itoa(i int) string { return strconv.Itoa(i) }
