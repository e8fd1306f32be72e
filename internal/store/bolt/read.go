package bolt

import (
	"bytes"
	"runtime/debug"

	bbolt "go.etcd.io/bbolt"

	"github.com/interlink-go/interlink/internal/store"
)

// Peek implements [Store.Peek]: the oldest entry of route that is not
// acknowledged. The returned entry is copied out of the read transaction.
func (s *Store) Peek(route string) (e store.Entry, ok bool, err error) {
	if err := s.usable(); err != nil {
		return store.Entry{}, false, err
	}
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer s.guard("peek", &err)
	// Holding mu across the transaction keeps the writer from forgetting
	// an acknowledged key between the moment the transaction starts (and
	// may still see the entry) and the moment the key is looked up: the
	// writer forgets a key only after the commit that deleted it, and only
	// with mu held for writing.
	s.mu.RLock()
	defer s.mu.RUnlock()
	skip := s.acks.in(route) > 0
	err = s.db.View(func(tx *bbolt.Tx) error {
		c := tx.Bucket(bucketMessages).Cursor()
		prefix := []byte(store.RoutePrefix(route))
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			if len(k) != len(prefix)+store.SeqDigits {
				continue
			}
			if skip {
				if s.acks.has(string(k)) {
					continue
				}
			}
			e, ok = store.Entry{Key: string(k), Value: bytes.Clone(v)}, true
			return nil
		}
		return nil
	})
	if err != nil {
		return store.Entry{}, false, s.wrap("peek", err)
	}
	return e, ok, nil
}

// Delete implements [Store.Delete]. It returns before the deletion is
// committed: the entry is marked acknowledged at once, so Peek and Depth
// no longer see it, and the writer deletes it with its next commit (see
// [Store]). Deleting a key that is not stored, or again, changes nothing.
func (s *Store) Delete(key string) (err error) {
	if err := s.usable(); err != nil {
		return err
	}
	route, _, ok := store.ParseKey(key)
	if !ok {
		return nil
	}
	n, err := s.markAcked(key, route)
	if err != nil {
		return s.wrap("delete", err)
	}
	if n == 0 {
		return nil
	}
	return s.w.acknowledged(n)
}

// markAcked records key, of route, as acknowledged if it is stored and not
// acknowledged yet. It returns the number of acknowledged keys then waiting,
// or 0 when it recorded nothing.
func (s *Store) markAcked(key, route string) (n int, err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer s.guard("delete", &err)
	// The lookup and the record happen under mu, so the writer cannot
	// apply a commit in between. A commit that dropped the key and is not
	// applied yet is noticed when it is: see writer.apply.
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.acks.has(key) {
		return 0, nil
	}
	var (
		stored bool
		size   int64
	)
	err = s.db.View(func(tx *bbolt.Tx) error {
		v := tx.Bucket(bucketMessages).Get([]byte(key))
		stored, size = v != nil, store.EntrySize(route, len(v))
		return nil
	})
	if err != nil || !stored {
		return 0, err
	}
	s.acks.add(key, route, size)
	return s.acks.len(), nil
}

// Depth implements [Store.Depth] from the cached counts, less the
// acknowledged entries whose delete is not committed yet.
func (s *Store) Depth(route string) (int, error) {
	if err := s.usable(); err != nil {
		return 0, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.counts.depth(route) - s.acks.in(route), nil
}

// Totals implements [store.Totaler] from the committed per-route counts, less
// the acknowledged entries whose delete is not committed yet, as
// [Store.Depth] counts them.
func (s *Store) Totals() (store.Totals, error) {
	if err := s.usable(); err != nil {
		return store.Totals{}, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	t := store.Totals{Bytes: s.counts.bytes() - s.acks.bytes}
	for route, rs := range s.counts.committed {
		if n := rs.n - s.acks.in(route); n > 0 {
			t.Routes++
			t.Entries += n
		}
	}
	return t, nil
}

// full reports whether an entry of size cannot fit in the total bytes even
// if every acknowledged entry and every entry of route went, from the
// counts of the last commit. Such an enqueue is refused without a
// transaction, so that sends to a full store cost no commit each; the
// transaction decides every other (see enqueueTx).
func (s *Store) full(route string, size int64) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.counts.bytes()-s.acks.bytes-s.counts.committed[route].bytes+size > s.totalBytes
}

// first positions c on the oldest entry of the route whose prefix is given
// and returns it, or a nil key if the route has none. Keys of longer routes
// that share the prefix (possible only if routes contain NUL) are skipped:
// a key of this route is exactly the prefix plus the sequence digits.
func first(c *bbolt.Cursor, prefix []byte) (key, value []byte) {
	k, v := c.Seek(prefix)
	return inRoute(c, prefix, k, v)
}

// next moves c to the route's entry after the current one and returns it,
// or a nil key when there is none; see [first].
func next(c *bbolt.Cursor, prefix []byte) (key, value []byte) {
	k, v := c.Next()
	return inRoute(c, prefix, k, v)
}

// inRoute returns k and v if k is a key of the route whose prefix is
// given, or else the first such key after it, or nil.
func inRoute(c *bbolt.Cursor, prefix, k, v []byte) (key, value []byte) {
	for ; k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		if len(k) == len(prefix)+store.SeqDigits {
			return k, v
		}
	}
	return nil, nil
}
