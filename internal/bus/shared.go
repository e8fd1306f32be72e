package bus

import (
	"errors"
	"fmt"
	"strings"

	"github.com/interlink-go/interlink/internal/store"
)

// What a bus does when other buses share its store: wake its polls for
// messages they stored, report the store's health, and keep the roster in
// a log they share (see [RosterLog] and rostershared.go).

// MaxEnvelopeBytes is the largest value the bus stores for a message: an
// envelope around the payload of a /send body of [MaxBodyBytes]. A store
// that limits its values, such as a NATS server's max_payload, must take
// at least this much.
const MaxEnvelopeBytes = MaxBodyBytes + 64

// MaxEntryBytes is what the largest message the bus stores counts for
// against a store's byte bounds ([store.EntrySize]): its envelope on the
// longest route. A route's byte bound below it would refuse valid sends for
// good, so interlink-bus accepts none lower.
var MaxEntryBytes = store.EntrySize(strings.Repeat("r", MaxRouteBytes), MaxEnvelopeBytes)

// errUnavailable marks a store that cannot serve requests now; /healthz
// then answers 503.
var errUnavailable = errors.New("store unavailable")

// startShared starts what a store shared with other buses asks for. New
// calls it once, after the rest of s is set.
func (s *Server) startShared(opts *Options) {
	if w, ok := s.st.(store.Watcher); ok {
		// A message another bus stored wakes this bus's polls on its
		// route; when hints may have been lost, every poll looks again.
		s.unwatch = w.Watch(s.waiters.wake, s.waiters.wakeAll)
	}
	if opts.RosterLog != nil {
		s.shared = newSharedRoster(&s.roster, opts.RosterLog, s.log)
	}
}

// stopShared ends what startShared started. Shutdown calls it once.
func (s *Server) stopShared() {
	if s.unwatch != nil {
		s.unwatch()
	}
	if s.shared != nil {
		s.shared.stop()
	}
}

// storeHealth returns nil when the store can serve requests, and otherwise
// an error wrapping [errUnavailable]. Only stores that can fail and recover
// while the bus runs ([store.Health]) are asked; asking costs no I/O.
func (s *Server) storeHealth() error {
	h, ok := s.st.(store.Health)
	if !ok {
		return nil
	}
	if err := h.Healthy(); err != nil {
		return fmt.Errorf("%w: %w", errUnavailable, err)
	}
	return nil
}
