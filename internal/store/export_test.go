package store

import "fmt"

// What the external tests of this package reach inside a Memory.

// CheckMemory verifies the invariants of m; see check.
func CheckMemory(m *Memory) error { return m.check() }

// MemoryQueues returns how many queues m keeps and, for route, the slots
// of its queue's backing array and the live entries among them.
func MemoryQueues(m *Memory, route string) (queues, slots, live int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if q := m.queues[route]; q != nil {
		slots, live = len(q.entries), q.len()
	}
	return len(m.queues), slots, live
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
