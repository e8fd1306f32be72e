package bus

import (
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/interlink-go/interlink/internal/store"
	"github.com/interlink-go/interlink/internal/wire"
)

// send serves POST /send: wrap the payload in an envelope stamped with the
// bus clock, append it to the route's queue, and wake the route's polls.
//
// A signed request must be signed by the message's sender, and takes a
// token of that key's send bucket; see [Auth].
func (s *Server) send(w http.ResponseWriter, r *http.Request) error {
	signed, err := s.guard.admit(r)
	if err != nil {
		return err
	}
	limit := s.MaxBody()
	body, err := readBody(w, r, limit, s.requestTimeout)
	if err != nil {
		if limit < wire.MaxBodyBytes && errors.Is(err, errTooLarge) {
			return fmt.Errorf("%w, the most this bus's store takes", err)
		}
		return err
	}
	req, err := wire.DecodeSend(body)
	if err != nil {
		return err
	}
	if signed {
		if err := s.guard.signedSend(r, body, req.Payload); err != nil {
			return err
		}
	}
	ms := s.millis()
	_, dropped, err := s.st.Enqueue(req.To, wire.Envelope(req.Payload, ms))
	if be, ok := errors.AsType[*store.BoundError](err); ok {
		return s.refuse(req.To, be)
	}
	if err != nil {
		s.log.Error("enqueue failed", "to", req.To, "error", err)
		return fmt.Errorf("%w: %w", errStorage, err)
	}
	s.counters.stored.Add(1)
	s.page.Stored(ms)
	if dropped > 0 {
		s.counters.dropped.Add(uint64(dropped))
		for _, ev := range s.drops.note(req.To, dropped, s.now()) {
			ev.log(s)
		}
	}
	s.waiters.wake(req.To)
	w.WriteHeader(http.StatusAccepted)
	return nil
}

// refuse counts a send the store refused for one of its byte bounds and
// returns the error to answer with.
//
// A message over a route's bound can never be stored, so it gets 413
// like a body over [wire.MaxBodyBytes], which clients take as final; with the
// bounds interlink-bus accepts it cannot happen, since a route holds at
// least the largest body. A bus whose queues hold as many bytes as its
// total bound allows answers 507 with Retry-After: the condition passes as
// receivers acknowledge, and clients keep the message and send it again
// (interlink's agents retry every 5xx, the original's clients every
// failure). Refusing, rather than dropping the oldest messages of other
// routes as a full route does its own, means that a flood of one client
// never costs another client a message already accepted; it can only make
// new sends wait.
func (s *Server) refuse(to string, be *store.BoundError) error {
	if errors.Is(be, store.ErrPayloadLimit) {
		// The store's limit went down after the body was read, as when
		// a NATS connection moved to a server with a lower max_payload.
		s.log.Warn("message longer than the store takes", "to", to, "bytes", be.Size, "max_value", be.Bound)
		return fmt.Errorf("%w: more than %d bytes, the most this bus's store takes", errTooLarge, BodyLimit(be.Bound))
	}
	if errors.Is(be, store.ErrTooLarge) {
		s.counters.tooLarge.Add(1)
		s.log.Warn("message larger than a route may hold", "to", to, "bytes", be.Size, "route_bytes", be.Bound)
		return fmt.Errorf("%w: the message counts %d bytes, a route holds at most %d", errTooLarge, be.Size, be.Bound)
	}
	s.counters.full.Add(1)
	if n := s.fullLog.note(s.now()); n > 0 {
		s.log.Warn("queues full; refusing sends", "refused", n, "total_bytes", be.Bound)
	}
	return fmt.Errorf("%w: queued messages would exceed the bus's total bound of %d bytes; retry later", errFull, be.Bound)
}

// refusalLog rate-limits the warning about a full bus: at most one per
// [dropLogEvery], carrying the number of sends refused since the last.
type refusalLog struct {
	mu      sync.Mutex
	last    time.Time // guarded by mu; the last warning
	pending int       // guarded by mu; refused since the last warning
}

// note counts one refusal at now and returns the count to warn about, or
// 0 when no warning is due.
func (l *refusalLog) note(now time.Time) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.pending++
	if !l.last.IsZero() && !due(l.last, now) {
		return 0
	}
	n := l.pending
	l.pending, l.last = 0, now
	return n
}

// Limits of the drop warning.
const (
	// dropLogEvery is the shortest time between two warnings for one route.
	dropLogEvery = time.Second
	// dropLogRoutes bounds the routes the warning limiter tracks.
	dropLogRoutes = 1024
)

// dropLog rate-limits the warning logged when a full queue drops its oldest
// messages: at most one warning per route per [dropLogEvery], each carrying
// the number of messages dropped since the route's previous warning. Drops
// counted after a warning are reported with the route's next warning, or
// when the route is pruned.
//
// Bound: at most dropLogRoutes routes are tracked. When the map is full,
// routes whose last warning is older than dropLogEvery are pruned (and
// their pending counts logged); if it is still full, the drop is added to
// one shared counter for untracked routes, itself warned about at most once
// per dropLogEvery. A count still pending when drops stop is reported with
// the next warning that prunes.
type dropLog struct {
	mu     sync.Mutex
	routes map[string]*dropCount // guarded by mu
	other  dropCount             // untracked routes; guarded by mu
}

// dropCount is the limiter state of one route.
type dropCount struct {
	last    time.Time // the last warning
	pending int       // dropped since the last warning
}

// dropEvent is one warning to log.
type dropEvent struct {
	to      string
	other   bool // for untracked routes; to is empty
	dropped int
}

func (ev dropEvent) log(s *Server) {
	if ev.other {
		s.log.Warn("queue full; dropped oldest", "untracked", true, "dropped", ev.dropped)
		return
	}
	s.log.Warn("queue full; dropped oldest", "to", ev.to, "dropped", ev.dropped)
}

// due reports whether a warning last logged at last may be logged again at
// now. A clock that went backwards counts as due.
func due(last, now time.Time) bool {
	d := now.Sub(last)
	return d >= dropLogEvery || d < 0
}

// note counts n messages dropped from route's queue at now and returns the
// warnings to log. The caller logs them, outside the lock.
func (d *dropLog) note(route string, n int, now time.Time) []dropEvent {
	d.mu.Lock()
	defer d.mu.Unlock()
	if c := d.routes[route]; c != nil {
		c.pending += n
		if !due(c.last, now) {
			return nil
		}
		ev := dropEvent{to: route, dropped: c.pending}
		c.pending, c.last = 0, now
		return []dropEvent{ev}
	}
	var evs []dropEvent
	if len(d.routes) >= dropLogRoutes {
		evs = d.prune(now, evs)
	}
	if len(d.routes) >= dropLogRoutes {
		d.other.pending += n
		if due(d.other.last, now) {
			evs = append(evs, dropEvent{other: true, dropped: d.other.pending})
			d.other.pending, d.other.last = 0, now
		}
		return evs
	}
	if d.routes == nil {
		d.routes = make(map[string]*dropCount)
	}
	d.routes[route] = &dropCount{last: now}
	return append(evs, dropEvent{to: route, dropped: n})
}

// prune forgets the routes whose last warning is due again, appending a
// warning for those with drops still unreported, and for the untracked
// routes when theirs is due. d.mu must be held.
func (d *dropLog) prune(now time.Time, evs []dropEvent) []dropEvent {
	for route, c := range d.routes {
		if !due(c.last, now) {
			continue
		}
		if c.pending > 0 {
			evs = append(evs, dropEvent{to: route, dropped: c.pending})
		}
		delete(d.routes, route)
	}
	if d.other.pending > 0 && due(d.other.last, now) {
		evs = append(evs, dropEvent{other: true, dropped: d.other.pending})
		d.other.pending, d.other.last = 0, now
	}
	return evs
}

// len returns the number of tracked routes.
func (d *dropLog) len() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.routes)
}
