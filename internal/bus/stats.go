package bus

import (
	"slices"
	"sync/atomic"

	"github.com/interlink-go/interlink/internal/store"
)

// counters are the bus's running totals of messages, kept with atomic adds
// on the request path and read by [Server.Stats].
type counters struct {
	stored, delivered, acked, dropped atomic.Uint64
	// Sends refused by the store's byte bounds: full, for the total
	// (507), and tooLarge, for a message no route may hold (413).
	full, tooLarge atomic.Uint64
}

// Stats is what the bus can tell about itself at one moment, for metrics.
type Stats struct {
	// Messages stored by /send, handed out by /recv (a message handed
	// out twice counts twice), acknowledged by /ack, and dropped because
	// their route's queue was full, since the Server was made.
	Stored, Delivered, Acknowledged, Dropped uint64
	// RefusedFull counts sends refused because the queues held as many
	// bytes as the store's total bound allows, and RefusedTooLarge those
	// refused because the message alone is over a route's byte bound;
	// both since the Server was made.
	RefusedFull, RefusedTooLarge uint64
	// Unauthorized counts requests refused with 401 since the Server was
	// made, by reason ([AuthReasons]); Limited those refused with 429,
	// by limit ([LimitNames]).
	Unauthorized [numReasons]uint64
	Limited      [numLimits]uint64
	// Parked is the number of long-polls waiting for a message.
	Parked int
	// RosterEntries counts the roster's announcements, expired ones not
	// yet pruned included.
	RosterEntries int
	// Routes and Queued are the routes with messages and the messages the
	// store holds, and QueuedBytes what they count for against the
	// store's byte bounds ([store.Totals]); valid only when Totals is true
	// (the store reports them, see [store.Totaler], and did not fail).
	Routes, Queued int
	QueuedBytes    int64
	Totals         bool
}

// Stats returns the bus's counters and current sizes. It takes a lock of
// the waiters and of the roster, and asks the store for its totals, so
// call it for a scrape or a page, not per request.
func (s *Server) Stats() Stats {
	st := Stats{
		Stored:        s.counters.stored.Load(),
		Delivered:     s.counters.delivered.Load(),
		Acknowledged:  s.counters.acked.Load(),
		Dropped:       s.counters.dropped.Load(),
		Parked:        s.waiters.total(),
		RosterEntries: s.roster.Len(),
	}
	st.RefusedFull, st.RefusedTooLarge = s.counters.full.Load(), s.counters.tooLarge.Load()
	for i := range st.Unauthorized {
		st.Unauthorized[i] = s.guard.unauthorized[i].Load()
	}
	for i := range st.Limited {
		st.Limited[i] = s.guard.limited[i].Load()
	}
	if t, ok := s.st.(store.Totaler); ok {
		tot, err := t.Totals()
		if err != nil {
			s.log.Warn("store totals", "error", err)
		} else {
			st.Routes, st.Queued, st.QueuedBytes, st.Totals = tot.Routes, tot.Entries, tot.Bytes, true
		}
	}
	return st
}

// Paths returns every path the bus serves, sorted.
func Paths() []string {
	out := make([]string, 0, len(endpoints))
	for p := range endpoints {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}
