package bus

import "sync"

// waiters tracks the long-polls parked on each route so a send can wake
// them.
//
// A poll calls register before it peeks at the store and unregister when it
// stops waiting; a send calls wake after its message is committed. If the
// wake comes after register, the poll's channel is closed; if it comes
// before, the message was committed before the peek and the peek sees it.
// Either way no wake-up is lost.
//
// Bound: the map holds one entry per route with at least one registered
// poll, and an entry is deleted when its last poll unregisters. Sends never
// create entries.
type waiters struct {
	mu     sync.Mutex
	routes map[string]*waitRoute // guarded by mu
	n      int                   // registered polls on all routes; guarded by mu
}

// waitRoute is the state of one route with registered polls.
type waitRoute struct {
	ch chan struct{} // closed and cleared by wake; nil until the next register
	n  int           // registered polls
}

// register adds a poll on route and returns the channel that the next wake
// of route closes.
func (ws *waiters) register(route string) <-chan struct{} {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.routes == nil {
		ws.routes = make(map[string]*waitRoute)
	}
	wr := ws.routes[route]
	if wr == nil {
		wr = &waitRoute{}
		ws.routes[route] = wr
	}
	if wr.ch == nil {
		wr.ch = make(chan struct{})
	}
	wr.n++
	ws.n++
	return wr.ch
}

// unregister removes a poll that register added.
func (ws *waiters) unregister(route string) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	wr := ws.routes[route]
	if wr == nil {
		panic("bus: unregister without register")
	}
	wr.n--
	ws.n--
	if wr.n == 0 {
		delete(ws.routes, route)
	}
}

// wake wakes every poll registered on route.
func (ws *waiters) wake(route string) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if wr := ws.routes[route]; wr != nil && wr.ch != nil {
		close(wr.ch)
		wr.ch = nil
	}
}

// wakeAll wakes every registered poll, on every route.
func (ws *waiters) wakeAll() {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	for _, wr := range ws.routes {
		if wr.ch != nil {
			close(wr.ch)
			wr.ch = nil
		}
	}
}

// parked returns the number of polls registered on route.
func (ws *waiters) parked(route string) int {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if wr := ws.routes[route]; wr != nil {
		return wr.n
	}
	return 0
}

// total returns the number of polls registered on all routes.
func (ws *waiters) total() int {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	return ws.n
}

// len returns the number of routes with registered polls.
func (ws *waiters) len() int {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	return len(ws.routes)
}
