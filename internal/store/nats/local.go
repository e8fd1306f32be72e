package nats

import "sync"

// What a [Store] store keeps in its own process: turns per route, the
// routes of the sequences it peeked, and the tails of the routes it sent
// to.

// routeTurns lets the operations of one route run one at a time, so that
// Enqueue's count and publish see no Delete or Enqueue of the same route
// from this process in between. A turn is held across requests to the
// server; that is its purpose. Routes without a waiting or running
// operation cost nothing.
type routeTurns struct {
	mu    sync.Mutex
	turns map[string]*turn // guarded by mu; only routes with a holder
}

// turn is one route's token: a channel with room for one. refs counts the
// holder and the waiters.
type turn struct {
	token chan struct{}
	refs  int // guarded by routeTurns.mu
}

// take waits for route's turn and returns the function that ends it.
func (r *routeTurns) take(route string) (done func()) {
	r.mu.Lock()
	if r.turns == nil {
		r.turns = make(map[string]*turn)
	}
	t := r.turns[route]
	if t == nil {
		t = &turn{token: make(chan struct{}, 1)}
		r.turns[route] = t
	}
	t.refs++
	r.mu.Unlock()

	t.token <- struct{}{}
	return func() {
		<-t.token
		r.mu.Lock()
		if t.refs--; t.refs == 0 {
			delete(r.turns, route)
		}
		r.mu.Unlock()
	}
}

// held returns the number of routes with a holder or a waiter.
func (r *routeTurns) held() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.turns)
}

// seqRoutesMax is how many peeked sequences a [Store] store remembers.
const seqRoutesMax = 4096

// seqRoutes remembers the route of the sequences Peek returned most
// recently, at most seqRoutesMax of them; the one remembered longest ago is
// forgotten first. A sequence belongs to one subject for the life of the
// stream, so a remembered pair stays true after the message is gone: a
// Delete that finds the pair here may skip asking the server, and still
// deletes nothing when the message is no longer there.
type seqRoutes struct {
	mu     sync.Mutex
	routes map[uint64]string    // guarded by mu
	ring   [seqRoutesMax]uint64 // guarded by mu; sequences in the order added
	used   [seqRoutesMax]bool   // guarded by mu; which ring slots hold one
	next   int                  // guarded by mu; the ring slot to fill next
}

// add remembers that seq is on route.
func (r *seqRoutes) add(seq uint64, route string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.routes == nil {
		r.routes = make(map[uint64]string)
	}
	if _, ok := r.routes[seq]; ok {
		return
	}
	if r.used[r.next] {
		delete(r.routes, r.ring[r.next])
	}
	r.ring[r.next], r.used[r.next] = seq, true
	r.next = (r.next + 1) % seqRoutesMax
	r.routes[seq] = route
}

// is reports whether seq is remembered to be on route.
func (r *seqRoutes) is(seq uint64, route string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	got, ok := r.routes[seq]
	return ok && got == route
}

// forget drops seq, whose message is gone. Its ring slot stays until it
// is reused.
func (r *seqRoutes) forget(seq uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.routes, seq)
}

// len returns the number of remembered sequences.
func (r *seqRoutes) len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.routes)
}

// routeTailsMax is how many routes a [Store] store remembers the tail of.
const routeTailsMax = 4096

// routeTails remembers, for the routes this store enqueued to most
// recently, the sequence of the last message on the route and an upper
// bound of the number of messages on it, both as this store left them.
// Enqueue publishes on the condition that the remembered sequence is
// still the last (the server refuses the publish otherwise, and says what
// is last), so a send to a route whose bound leaves room under the cap
// needs neither a count nor a second request, and another process's send
// to the route in between is never missed. Deletes elsewhere only lower
// the true count below the bound. An entry is read and changed only
// during the route's turn (routeTurns); the lock guards the map.
type routeTails struct {
	mu    sync.Mutex
	tails map[string]tail // guarded by mu
}

// tail is what routeTails remembers of one route.
type tail struct {
	last uint64 // the sequence last on the route; 0: the route is empty
	n    int    // at least the number of messages on the route
}

// get returns what is remembered of route; unknown, the route is taken
// to be empty, which the conditional publish then checks.
func (r *routeTails) get(route string) (last uint64, n int, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	t, ok := r.tails[route]
	return t.last, t.n, ok
}

// set remembers that last is the sequence last on route, and n the most
// messages on it.
func (r *routeTails) set(route string, last uint64, n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.tails == nil {
		r.tails = make(map[string]tail)
	}
	if _, ok := r.tails[route]; !ok && len(r.tails) >= routeTailsMax {
		for k := range r.tails { // forget one, any one
			delete(r.tails, k)
			break
		}
	}
	r.tails[route] = tail{last: last, n: n}
}

// forget drops what is remembered of route.
func (r *routeTails) forget(route string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.tails, route)
}

// deleted records that this store deleted the message seq of route. The
// bound goes down by one; when the message was the last on the route,
// the route is empty if the bound says so, and otherwise what is last is
// not known and the route is forgotten.
func (r *routeTails) deleted(route string, seq uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	t, ok := r.tails[route]
	if !ok {
		return
	}
	t.n = max(0, t.n-1)
	switch {
	case seq != t.last:
	case t.n == 0:
		t.last = 0
	default:
		delete(r.tails, route)
		return
	}
	r.tails[route] = t
}

// len returns the number of remembered routes.
func (r *routeTails) len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.tails)
}
