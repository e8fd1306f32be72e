// Package connlimit caps how many connections a listener keeps open at
// once, and shares that capacity fairly among the clients that use it.
//
// A client is a source address: an IPv4 address, or an IPv6 /64, which is
// what one host is normally given. While fewer than the capacity are open,
// every new connection is taken. Once the capacity is reached, a new
// connection is taken only if its client holds at least two fewer
// connections than the client holding the most; that client's oldest
// connection is then closed to make room. Otherwise the new connection is
// closed at once.
//
// Why fair shedding rather than a fixed number per client: a fixed share
// small enough to protect others would also cap a legitimate client that
// needs many connections while nobody else wants them (a load test, or
// every session of a machine reaching the bus from one address), and one
// large enough for those would protect nobody. Shedding from the largest
// holder lets one client use the whole capacity while it is alone, and
// never lets it keep a newcomer out: a client is always let in while it
// holds fewer connections than another, so the capacity ends up shared
// evenly among the clients that want it. A client holding many stalled
// connections loses its oldest first, the ones stalled longest.
//
// What shedding cannot tell apart is clients behind one address: a proxy,
// or every process of a machine reaching a bus on loopback. They count as
// one client.
package connlimit

import (
	"errors"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"syscall"
)

// Stats counts what a [Listener] does. It is safe for concurrent use.
type Stats struct {
	max     atomic.Int64
	open    atomic.Int64
	shed    atomic.Uint64
	refused atomic.Uint64
}

// Max returns the listener's capacity.
func (st *Stats) Max() int64 { return st.max.Load() }

// Open returns how many of the listener's connections are open.
func (st *Stats) Open() int64 { return st.open.Load() }

// Shed returns how many open connections were closed to make room for a
// client holding fewer.
func (st *Stats) Shed() uint64 { return st.shed.Load() }

// Refused returns how many new connections were closed at once, because
// the capacity was reached and their client held about as many as anyone.
func (st *Stats) Refused() uint64 { return st.refused.Load() }

// Listener is a [net.Listener] that keeps at most its capacity of
// connections open, as the package comment describes. Create it with
// [Listen]. Its connections must be closed through the [net.Conn] it
// returns, which frees their place.
type Listener struct {
	net.Listener
	stats *Stats
	max   int

	mu      sync.Mutex // guards the fields below, and those of every client and conn
	open    int
	clients map[netip.Prefix]*client
	// levels[n] heads the list of clients holding n connections; top is
	// the highest n whose list is not empty, 0 when nothing is open.
	levels []*client
	top    int
}

// client is one source address and the connections it holds, oldest
// first. Its fields are guarded by the listener's mu.
type client struct {
	key        netip.Prefix
	n          int
	head, tail *conn
	// prev and next link the clients that hold n connections.
	prev, next *client
}

// Listen wraps ln so that it keeps at most capacity connections open (at
// least one). When stats is not nil, the listener counts what it does
// there.
func Listen(ln net.Listener, capacity int, stats *Stats) *Listener {
	if stats == nil {
		stats = new(Stats)
	}
	capacity = max(capacity, 1)
	stats.max.Store(int64(capacity))
	return &Listener{
		Listener: ln,
		stats:    stats,
		max:      capacity,
		clients:  make(map[netip.Prefix]*client),
		levels:   make([]*client, 1),
	}
}

// Accept returns the next connection the listener takes. Connections it
// refuses are closed without being returned.
func (l *Listener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if lc := l.admit(c); lc != nil {
			return lc, nil
		}
	}
}

// admit takes c, closing another client's oldest connection if the
// listener is full, or closes c and returns nil.
func (l *Listener) admit(c net.Conn) *conn {
	key := clientOf(c.RemoteAddr())
	l.mu.Lock()
	cl := l.clients[key]
	have := 0
	if cl != nil {
		have = cl.n
	}
	var shed *conn
	if l.open >= l.max {
		if l.top < have+2 {
			l.mu.Unlock()
			c.Close()
			l.stats.refused.Add(1)
			return nil
		}
		shed = l.levels[l.top].head
		l.forget(shed)
	}
	if cl == nil {
		cl = &client{key: key}
		l.clients[key] = cl
	}
	lc := &conn{Conn: c, l: l, cl: cl}
	l.hold(lc)
	l.mu.Unlock()
	if shed != nil {
		shed.Conn.Close()
		l.stats.shed.Add(1)
	}
	return lc
}

// hold records c as open, the newest of its client. l.mu must be held.
func (l *Listener) hold(c *conn) {
	cl := c.cl
	c.prev = cl.tail
	if cl.tail != nil {
		cl.tail.next = c
	} else {
		cl.head = c
	}
	cl.tail = c
	l.unlevel(cl)
	cl.n++
	l.level(cl)
	l.open++
	l.stats.open.Add(1)
}

// forget records c as closed, once. l.mu must be held.
func (l *Listener) forget(c *conn) {
	if c.gone {
		return
	}
	c.gone = true
	cl := c.cl
	if c.prev != nil {
		c.prev.next = c.next
	} else {
		cl.head = c.next
	}
	if c.next != nil {
		c.next.prev = c.prev
	} else {
		cl.tail = c.prev
	}
	c.prev, c.next = nil, nil
	l.unlevel(cl)
	cl.n--
	if cl.n > 0 {
		l.level(cl)
	} else {
		delete(l.clients, cl.key)
	}
	l.open--
	l.stats.open.Add(-1)
}

// level puts cl in the list of clients holding cl.n connections, which
// must be at least one. l.mu must be held.
func (l *Listener) level(cl *client) {
	for len(l.levels) <= cl.n {
		l.levels = append(l.levels, nil)
	}
	cl.prev, cl.next = nil, l.levels[cl.n]
	if cl.next != nil {
		cl.next.prev = cl
	}
	l.levels[cl.n] = cl
	l.top = max(l.top, cl.n)
}

// unlevel takes cl out of the list of clients holding cl.n connections,
// if it is in one. l.mu must be held.
func (l *Listener) unlevel(cl *client) {
	if cl.n == 0 {
		return
	}
	if cl.prev != nil {
		cl.prev.next = cl.next
	} else {
		l.levels[cl.n] = cl.next
	}
	if cl.next != nil {
		cl.next.prev = cl.prev
	}
	cl.prev, cl.next = nil, nil
	for l.top > 0 && l.levels[l.top] == nil {
		l.top--
	}
}

// clientOf returns the client a remote address belongs to: the address
// itself for IPv4, its /64 for IPv6. Addresses that are not IP addresses
// all belong to one client.
func clientOf(a net.Addr) netip.Prefix {
	var ip netip.Addr
	switch a := a.(type) {
	case *net.TCPAddr:
		ip, _ = netip.AddrFromSlice(a.IP)
	default:
		if ap, err := netip.ParseAddrPort(a.String()); err == nil {
			ip = ap.Addr()
		}
	}
	ip = ip.Unmap()
	switch {
	case ip.Is4():
		return netip.PrefixFrom(ip, 32)
	case ip.Is6():
		p, _ := ip.WithZone("").Prefix(64)
		return p
	default:
		return netip.Prefix{}
	}
}

// conn is a connection the listener took. Closing it frees its place.
type conn struct {
	net.Conn
	l  *Listener
	cl *client
	// Guarded by l.mu.
	prev, next *conn
	gone       bool
}

// Close closes the connection and frees its place.
func (c *conn) Close() error {
	c.l.mu.Lock()
	c.l.forget(c)
	c.l.mu.Unlock()
	return c.Conn.Close()
}

// SyscallConn returns the raw connection underneath, so that code that
// looks at the socket itself still can.
func (c *conn) SyscallConn() (syscall.RawConn, error) {
	if sc, ok := c.Conn.(syscall.Conn); ok {
		return sc.SyscallConn()
	}
	return nil, errors.ErrUnsupported
}

// CloseWrite shuts down the writing side of the connection underneath,
// where it has one (TCP does): the HTTP server does so before it closes a
// connection whose client may still be sending.
func (c *conn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return errors.ErrUnsupported
}
