package store

// Totaler is implemented by the stores that can tell, without reading every
// queue, how many routes hold entries and how many entries they hold
// together. The bus reports both in its metrics and on its status page.
type Totaler interface {
	Totals() (routes, entries int, err error)
}

var (
	_ Totaler = (*Memory)(nil)
	_ Totaler = (*Bolt)(nil)
	_ Totaler = (*NATS)(nil)
)

// Totals implements [Totaler]. It holds the lock for a pass over the
// routes, not over the entries.
func (s *Memory) Totals() (routes, entries int, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return 0, 0, ErrClosed
	}
	for _, q := range s.queues {
		entries += q.len()
	}
	return len(s.queues), entries, nil
}

// Totals implements [Totaler] from the committed per-route counts, less
// the acknowledged entries whose delete is not committed yet, as
// [Bolt.Depth] counts them.
func (s *Bolt) Totals() (routes, entries int, err error) {
	if err := s.usable(); err != nil {
		return 0, 0, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	for route, n := range s.counts.committed {
		if n -= s.ackedN[route]; n > 0 {
			routes++
			entries += n
		}
	}
	return routes, entries, nil
}

// Totals implements [Totaler] with one stream-info request.
func (s *NATS) Totals() (routes, entries int, err error) {
	if s.closed.Load() {
		return 0, 0, ErrClosed
	}
	ctx, cancel := s.ctx()
	defer cancel()
	info, err := s.stream.Info(ctx)
	if err != nil {
		return 0, 0, s.wrap("totals", err)
	}
	return int(info.State.NumSubjects), int(info.State.Msgs), nil
}
