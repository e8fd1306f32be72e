package store

// Totals is what all queues of a store hold together.
type Totals struct {
	// Routes is the number of routes with at least one entry, and
	// Entries the entries they hold.
	Routes, Entries int
	// Bytes is what the entries count for against [Options.TotalBytes]:
	// [EntrySize] of each for [Memory] and [Bolt], the stream's own count
	// for [NATS].
	Bytes int64
}

// Totaler is implemented by the stores that can tell, without reading every
// queue, what all queues hold together. The bus reports it in its metrics
// and on its status page.
type Totaler interface {
	Totals() (Totals, error)
}

var (
	_ Totaler = (*Memory)(nil)
	_ Totaler = (*Bolt)(nil)
	_ Totaler = (*NATS)(nil)
)

// Totals implements [Totaler]. It holds the lock for a pass over the
// routes, not over the entries.
func (s *Memory) Totals() (Totals, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return Totals{}, ErrClosed
	}
	t := Totals{Routes: len(s.queues), Bytes: s.bytes}
	for _, q := range s.queues {
		t.Entries += q.len()
	}
	return t, nil
}

// Totals implements [Totaler] from the committed per-route counts, less
// the acknowledged entries whose delete is not committed yet, as
// [Bolt.Depth] counts them.
func (s *Bolt) Totals() (Totals, error) {
	if err := s.usable(); err != nil {
		return Totals{}, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	t := Totals{Bytes: s.counts.bytes() - s.ackedBytes}
	for route, rs := range s.counts.committed {
		if n := rs.n - s.ackedN[route]; n > 0 {
			t.Routes++
			t.Entries += n
		}
	}
	return t, nil
}

// Totals implements [Totaler] with one stream-info request.
func (s *NATS) Totals() (Totals, error) {
	if s.closed.Load() {
		return Totals{}, ErrClosed
	}
	ctx, cancel := s.ctx()
	defer cancel()
	info, err := s.stream.Info(ctx)
	if err != nil {
		return Totals{}, s.wrap("totals", err)
	}
	return Totals{Routes: int(info.State.NumSubjects), Entries: int(info.State.Msgs), Bytes: int64(info.State.Bytes)}, nil
}
