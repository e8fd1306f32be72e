package bolt

import (
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	bbolt "go.etcd.io/bbolt"

	"github.com/interlink-go/interlink/internal/store"
	"github.com/interlink-go/interlink/internal/store/storetest"
)

// backend is the backend of the conformance tests: a new store in a file
// of the test's own, checked and closed when the test ends.
var backend = storetest.Backend{
	Open: func(tb testing.TB, opts *store.Options) store.Store {
		return openBolt(tb, filepath.Join(tb.TempDir(), "bus.db"), withBase(opts))
	},
	Slow: true,
}

func TestConformance(t *testing.T) { storetest.Run(t, backend) }

// withBase returns the options of a store with the shared settings opts
// (nil means defaults).
func withBase(opts *store.Options) *Options {
	o := &Options{}
	if opts != nil {
		o.Options = *opts
	}
	return o
}

// openBolt opens path and checks and closes the store at cleanup.
func openBolt(tb testing.TB, path string, opts *Options) *Store {
	tb.Helper()
	s, err := Open(path, opts)
	if err != nil {
		tb.Fatalf("Open: %v", err)
	}
	tb.Cleanup(func() { checkAndClose(tb, s) })
	return s
}

// checkAndClose checks s's invariants, then closes it.
func checkAndClose(tb testing.TB, s *Store) {
	tb.Helper()
	if err := checkInvariants(s); err != nil {
		tb.Errorf("store invariants: %v", err)
	}
	if err := s.Close(); err != nil && !errors.Is(err, store.ErrClosed) {
		tb.Errorf("Close: %v", err)
	}
}

// checkInvariants commits the acknowledgements waiting, then verifies, by a full scan,
// that every key is well formed and below next_seq and that the cached
// counts and sizes equal those of the stored entries. The bounds are not
// checked: bounds lowered since the entries were stored are enforced
// lazily. Nothing may write while it runs.
func checkInvariants(s *Store) error {
	if s.closed.Load() || s.health.err() != nil {
		return nil
	}
	if err := s.w.flush(); err != nil {
		return err
	}
	s.mu.RLock()
	waiting := s.acks.len() + len(s.acks.perRoute) + int(s.acks.bytes)
	s.mu.RUnlock()
	if waiting != 0 {
		return fmt.Errorf("acknowledgements still waiting after a flush")
	}
	scanned, err := scanCounts(s)
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
func scanCounts(s *Store) (map[string]routeSize, error) {
	counts := make(map[string]routeSize)
	err := s.db.View(func(tx *bbolt.Tx) error {
		next, err := readNextSeq(tx.Bucket(bucketMeta))
		if err != nil {
			return err
		}
		return tx.Bucket(bucketMessages).ForEach(func(k, v []byte) error {
			route, seq, ok := store.ParseKey(string(k))
			if !ok || store.Key(route, seq) != string(k) {
				return fmt.Errorf("malformed key %q", k)
			}
			if seq >= next {
				return fmt.Errorf("key %q not below next_seq %d", k, next)
			}
			rs := counts[route]
			counts[route] = routeSize{rs.n + 1, rs.bytes + store.EntrySize(route, len(v))}
			return nil
		})
	})
	return counts, err
}

var (
	enqueue   = storetest.Enqueue
	peek      = storetest.Peek
	del       = storetest.Delete
	depth     = storetest.Depth
	wantHead  = storetest.WantHead
	wantEmpty = storetest.WantEmpty
	drain     = storetest.Drain
	seqOf     = storetest.SeqOf
)

func itoa(i int) string { return strconv.Itoa(i) }

var (
	value      = storetest.Value
	wantBound  = storetest.WantBound
	fillRoutes = storetest.FillRoutes
	entrySize  = storetest.EntrySize
)

// totals returns what s holds.
func totals(tb testing.TB, s *Store) store.Totals {
	tb.Helper()
	t, err := s.Totals()
	if err != nil {
		tb.Fatalf("Totals: %v", err)
	}
	return t
}
