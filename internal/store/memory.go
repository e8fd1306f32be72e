package store

import (
	"bytes"
	"sort"
	"sync"
)

// Memory is a [Store] that keeps its queues in process memory. Everything is
// lost when the process ends.
//
// Each route's queue holds at most the configured cap and per-route bytes;
// [Memory.Enqueue] drops the oldest entries of a full queue, and refuses an
// entry that would take all queues past the total bytes (see [Options]).
// Queues that become empty are removed, so routes that were drained cost
// nothing. The number of routes is bounded only through the total: every
// route with a queue holds at least one entry, and every entry counts at
// least [EntryOverhead] bytes, which covers the route's own bookkeeping.
//
// The sequence starts at the creation time in Unix nanoseconds and grows by
// one per enqueue. A key handed out before a restart therefore names a
// sequence number below every key the new store hands out, and acking it
// after the restart cannot delete a newer entry.
//
// One mutex guards all queues. No I/O and no value copying happen under it.
type Memory struct {
	cap        int   // fixed at creation
	routeBytes int64 // fixed at creation
	totalBytes int64 // fixed at creation

	mu     sync.Mutex
	queues map[string]*memQueue // guarded by mu; only non-empty queues
	bytes  int64                // guarded by mu; EntrySize of every entry, summed
	next   uint64               // guarded by mu; sequence of the next entry
	closed bool                 // guarded by mu
}

// memEntry is one stored entry. Its value is never modified after it is
// stored, so it may be read (and copied) outside the lock.
type memEntry struct {
	seq   uint64
	key   string
	value []byte
}

// size returns what the entry counts for against the byte bounds: its
// [EntrySize], from the route at the start of its key.
func (e *memEntry) size() int64 {
	return EntrySize(e.key[:len(e.key)-1-SeqDigits], len(e.value))
}

// memQueue is one route's entries, oldest first, in entries[head:]. Slots
// before head are zeroed so dropped values can be collected; the slice is
// compacted once the dead prefix is at least as long as the live part, which
// keeps dropping the oldest entry O(1) amortized.
type memQueue struct {
	entries []memEntry
	head    int
	bytes   int64 // the size of the live entries, summed
}

func (q *memQueue) len() int { return len(q.entries) - q.head }

func (q *memQueue) push(e memEntry) { q.entries = append(q.entries, e) }

// popFront removes the oldest entry.
func (q *memQueue) popFront() {
	q.bytes -= q.entries[q.head].size()
	q.entries[q.head] = memEntry{}
	q.head++
	if q.head == len(q.entries) {
		q.entries, q.head = q.entries[:0], 0
		return
	}
	if q.head >= 32 && q.head >= q.len() {
		n := copy(q.entries, q.entries[q.head:])
		clear(q.entries[n:])
		q.entries, q.head = q.entries[:n], 0
	}
}

// remove deletes the entry with this key, if present, and returns its
// size, or 0 if it was not there. Entries are sorted by sequence, so it is
// found by binary search; removing the head is O(1), removing from the
// middle moves the later entries.
func (q *memQueue) remove(key string, seq uint64) int64 {
	live := q.entries[q.head:]
	i := sort.Search(len(live), func(i int) bool { return live[i].seq >= seq })
	if i == len(live) || live[i].key != key {
		return 0
	}
	size := live[i].size()
	if i == 0 {
		q.popFront()
		return size
	}
	q.bytes -= size
	copy(live[i:], live[i+1:])
	live[len(live)-1] = memEntry{}
	q.entries = q.entries[:len(q.entries)-1]
	return size
}

// overflow returns how many of the oldest entries must go, and the bytes
// they free, for the queue to take one more entry of size and stay within
// capacity and routeBytes. A nil queue has nothing to drop. size must not
// exceed routeBytes, so the new entry alone always fits.
func (q *memQueue) overflow(size int64, capacity int, routeBytes int64) (drop int, freed int64) {
	if q == nil {
		return 0, 0
	}
	n, b := q.len()+1, q.bytes+size
	for i := q.head; n > capacity || b > routeBytes; i++ {
		s := q.entries[i].size()
		n, b = n-1, b-s
		drop, freed = drop+1, freed+s
	}
	return drop, freed
}

// NewMemory returns an empty in-memory store. It uses opts.Cap, the byte
// bounds and opts.Now; it does not log.
func NewMemory(opts *Options) *Memory {
	o := opts.WithDefaults()
	var next uint64
	if ns := o.Now().UnixNano(); ns > 0 {
		next = uint64(ns)
	}
	return &Memory{
		cap:        o.Cap,
		routeBytes: o.RouteBytes,
		totalBytes: o.TotalBytes,
		queues:     make(map[string]*memQueue),
		next:       next,
	}
}

// Enqueue implements [Store.Enqueue]. It stores a copy of value, so the
// caller may reuse its buffer.
func (m *Memory) Enqueue(route string, value []byte) (key string, dropped int, err error) {
	size := EntrySize(route, len(value))
	if size > m.routeBytes {
		return "", 0, &BoundError{Err: ErrTooLarge, Bound: m.routeBytes, Size: size}
	}
	value = bytes.Clone(value)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return "", 0, ErrClosed
	}
	q := m.queues[route]
	// Decide before changing anything, so that a refusal leaves every
	// queue as it was.
	drop, freed := q.overflow(size, m.cap, m.routeBytes)
	if m.bytes+size-freed > m.totalBytes {
		return "", 0, &BoundError{Err: ErrFull, Bound: m.totalBytes, Size: size}
	}
	seq := m.next
	m.next++
	key = Key(route, seq)
	if q == nil {
		q = new(memQueue)
		m.queues[route] = q
	}
	q.push(memEntry{seq: seq, key: key, value: value})
	q.bytes += size
	for range drop {
		q.popFront()
	}
	m.bytes += size - freed
	return key, drop, nil
}

// Peek implements [Store.Peek]. The returned value is a copy.
func (m *Memory) Peek(route string) (Entry, bool, error) {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return Entry{}, false, ErrClosed
	}
	q := m.queues[route]
	if q == nil {
		m.mu.Unlock()
		return Entry{}, false, nil
	}
	e := q.entries[q.head]
	m.mu.Unlock()
	return Entry{Key: e.key, Value: bytes.Clone(e.value)}, true, nil
}

// Delete implements [Store.Delete]. A key that [Key] could not have made is
// simply not found.
func (m *Memory) Delete(key string) error {
	route, seq, ok := ParseKey(key)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	if !ok {
		return nil
	}
	q := m.queues[route]
	if q == nil {
		return nil
	}
	m.bytes -= q.remove(key, seq)
	if q.len() == 0 {
		delete(m.queues, route)
	}
	return nil
}

// Depth implements [Store.Depth].
func (m *Memory) Depth(route string) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return 0, ErrClosed
	}
	if q := m.queues[route]; q != nil {
		return q.len(), nil
	}
	return 0, nil
}

// Close implements [Store.Close] and frees every queue. Calling it again
// returns [ErrClosed].
func (m *Memory) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	m.closed = true
	m.queues = nil
	m.bytes = 0
	return nil
}

// Totals implements [Totaler]. It holds the lock for a pass over the
// routes, not over the entries.
func (m *Memory) Totals() (Totals, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return Totals{}, ErrClosed
	}
	t := Totals{Routes: len(m.queues), Bytes: m.bytes}
	for _, q := range m.queues {
		t.Entries += q.len()
	}
	return t, nil
}
