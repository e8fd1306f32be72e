package connlimit

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/netip"
	"syscall"
	"testing"
)

// fakeConn is one end of a pipe with a chosen remote address, which
// records whether it was closed.
type fakeConn struct {
	net.Conn
	remote net.Addr
	closed bool
}

func (c *fakeConn) RemoteAddr() net.Addr { return c.remote }
func (c *fakeConn) Close() error {
	c.closed = true
	return c.Conn.Close()
}

// fakeListener hands out the connections sent on conns.
type fakeListener struct {
	conns chan net.Conn
}

func (l *fakeListener) Accept() (net.Conn, error) {
	c, ok := <-l.conns
	if !ok {
		return nil, net.ErrClosed
	}
	return c, nil
}
func (l *fakeListener) Close() error   { return nil }
func (l *fakeListener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)} }

// limited is a Listener over a fakeListener with a queue of arrivals.
type limited struct {
	t     *testing.T
	inner *fakeListener
	l     *Listener
	stats *Stats
}

func newLimited(t *testing.T, capacity int) *limited {
	inner := &fakeListener{conns: make(chan net.Conn, 1024)}
	stats := new(Stats)
	return &limited{t: t, inner: inner, l: Listen(inner, capacity, stats), stats: stats}
}

// arrive makes a connection from ip arrive, and returns it.
func (lt *limited) arrive(ip string) *fakeConn {
	lt.t.Helper()
	a, b := net.Pipe()
	lt.t.Cleanup(func() { a.Close(); b.Close() })
	c := &fakeConn{Conn: a, remote: &net.TCPAddr{IP: net.ParseIP(ip), Port: 40000 + rand.IntN(20000)}}
	lt.inner.conns <- c
	return c
}

// accept returns the next connection the listener takes; every arrival
// it refuses before that is closed.
func (lt *limited) accept() net.Conn {
	lt.t.Helper()
	c, err := lt.l.Accept()
	if err != nil {
		lt.t.Fatal(err)
	}
	return c
}

// admitted makes a connection arrive from ip and checks that it is taken.
func (lt *limited) admitted(ip string) (net.Conn, *fakeConn) {
	lt.t.Helper()
	raw := lt.arrive(ip)
	c := lt.accept()
	if c.(*conn).Conn != raw {
		lt.t.Fatalf("a connection from %s was not taken", ip)
	}
	return c, raw
}

func TestTakesEveryConnectionBelowCapacity(t *testing.T) {
	lt := newLimited(t, 3)
	for range 3 {
		lt.admitted("192.0.2.1")
	}
	if lt.stats.Open() != 3 || lt.stats.Max() != 3 || lt.stats.Shed() != 0 || lt.stats.Refused() != 0 {
		t.Fatalf("open %d max %d shed %d refused %d", lt.stats.Open(), lt.stats.Max(), lt.stats.Shed(), lt.stats.Refused())
	}
}

func TestFullListenerShedsOldestOfLargestHolderForNewcomer(t *testing.T) {
	lt := newLimited(t, 4)
	var hog []*fakeConn
	for range 4 {
		_, raw := lt.admitted("192.0.2.1")
		hog = append(hog, raw)
	}
	// The hog is refused a fifth; a newcomer is let in, and the hog's
	// oldest connection makes room.
	refused := lt.arrive("192.0.2.1")
	lt.admitted("192.0.2.2")
	if !refused.closed {
		t.Error("the hog's fifth connection, beyond a full listener, was not closed")
	}
	if !hog[0].closed || hog[1].closed || hog[2].closed || hog[3].closed {
		t.Errorf("closed %v %v %v %v, want only the hog's oldest", hog[0].closed, hog[1].closed, hog[2].closed, hog[3].closed)
	}
	if lt.stats.Open() != 4 || lt.stats.Shed() != 1 || lt.stats.Refused() != 1 {
		t.Errorf("open %d shed %d refused %d, want 4, 1, 1", lt.stats.Open(), lt.stats.Shed(), lt.stats.Refused())
	}
	// The newcomer goes on until both hold two.
	lt.admitted("192.0.2.2")
	if !hog[1].closed {
		t.Error("the hog's next oldest connection was not shed")
	}
	refused = lt.arrive("192.0.2.2")
	lt.admitted("192.0.2.3")
	if !refused.closed {
		t.Error("a client holding as many as the largest was let in")
	}
}

func TestClosingFreesThePlaceOnce(t *testing.T) {
	lt := newLimited(t, 2)
	a, _ := lt.admitted("192.0.2.1")
	b, braw := lt.admitted("192.0.2.1")
	a.Close()
	a.Close() // a second close frees nothing more
	if n := lt.stats.Open(); n != 1 {
		t.Fatalf("open %d after closing one of two, twice", n)
	}
	lt.admitted("192.0.2.1")
	refused := lt.arrive("192.0.2.1")
	lt.admitted("192.0.2.9")
	if !refused.closed {
		t.Error("a third connection beyond the capacity of two was taken")
	}
	if !braw.closed {
		t.Fatal("the oldest connection of the client holding two was not shed")
	}
	// Closing a shed connection frees no second place.
	b.Close()
	if n := lt.stats.Open(); n != 2 {
		t.Errorf("open %d, want 2", n)
	}
}

// TestSharesCapacityEvenly: whatever order clients come and go in, a
// client is refused only when the listener is full and it holds at least
// as many connections as the largest holder less one, the connection shed
// is the oldest of a largest holder, and never more than the capacity is
// open.
func TestSharesCapacityEvenly(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	const capacity = 40
	lt := newLimited(t, capacity)
	held := map[netip.Prefix][]*conn{} // the model: each client's connections, oldest first
	for i := range 5000 {
		ip := fmt.Sprintf("192.0.2.%d", 1+r.IntN(7))
		key := netip.MustParsePrefix(ip + "/32")
		if r.IntN(4) == 0 && len(held[key]) > 0 {
			k := r.IntN(len(held[key]))
			held[key][k].Close()
			held[key] = append(held[key][:k:k], held[key][k+1:]...)
			continue
		}
		mine, top := len(held[key]), 0
		for _, cs := range held {
			top = max(top, len(cs))
		}
		full := lt.stats.Open() == capacity
		a, b := net.Pipe()
		raw := &fakeConn{Conn: a, remote: &net.TCPAddr{IP: net.ParseIP(ip), Port: 1}}
		c := lt.l.admit(raw)
		a.Close()
		b.Close()
		switch {
		case c == nil && (!full || mine+2 <= top):
			t.Fatalf("step %d: refused a client holding %d (largest %d, full %v)", i, mine, top, full)
		case c == nil:
			if !raw.closed {
				t.Fatalf("step %d: a refused connection was left open", i)
			}
		case full && mine+2 > top:
			t.Fatalf("step %d: let a client holding %d into a full listener whose largest holder has %d", i, mine, top)
		case full:
			// Exactly one connection was shed: the oldest of a largest
			// holder.
			shed := 0
			for k, cs := range held {
				if len(cs) > 0 && cs[0].Conn.(*fakeConn).closed {
					if len(cs) != top {
						t.Fatalf("step %d: shed from a client holding %d, the largest holds %d", i, len(cs), top)
					}
					held[k] = cs[1:]
					shed++
				}
				for _, x := range held[k] {
					if x.Conn.(*fakeConn).closed {
						t.Fatalf("step %d: shed a connection that was not its client's oldest", i)
					}
				}
			}
			if shed != 1 {
				t.Fatalf("step %d: %d connections shed, want 1", i, shed)
			}
		}
		if c != nil {
			held[key] = append(held[key], c)
		}
		n := 0
		for _, cs := range held {
			n += len(cs)
		}
		if int64(n) != lt.stats.Open() || n > capacity {
			t.Fatalf("step %d: the model holds %d, the listener counts %d, capacity %d", i, n, lt.stats.Open(), capacity)
		}
	}
}

func TestClientIsTheIPv4AddressOrTheIPv6Slash64(t *testing.T) {
	for _, tc := range []struct {
		addr net.Addr
		want string
	}{
		{&net.TCPAddr{IP: net.ParseIP("192.0.2.7"), Port: 5}, "192.0.2.7/32"},
		{&net.TCPAddr{IP: net.ParseIP("::ffff:192.0.2.7"), Port: 5}, "192.0.2.7/32"},
		{&net.TCPAddr{IP: net.ParseIP("2001:db8:1:2:aaaa:bbbb:cccc:dddd"), Port: 5}, "2001:db8:1:2::/64"},
		{&net.TCPAddr{IP: net.ParseIP("fe80::1"), Port: 5, Zone: "eth0"}, "fe80::/64"},
		{&net.UnixAddr{Name: "/run/bus.sock", Net: "unix"}, "invalid Prefix"},
	} {
		if got := clientOf(tc.addr).String(); got != tc.want {
			t.Errorf("clientOf(%v) = %s, want %s", tc.addr, got, tc.want)
		}
	}
}

func TestAcceptSkipsRefusedConnections(t *testing.T) {
	lt := newLimited(t, 2)
	lt.admitted("192.0.2.1")
	lt.admitted("192.0.2.1")
	refused := lt.arrive("192.0.2.1")
	taken := lt.arrive("192.0.2.2")
	if c := lt.accept(); c.(*conn).Conn != taken || !refused.closed {
		t.Fatalf("Accept returned %v, refused closed %v; want the second client's connection", c.RemoteAddr(), refused.closed)
	}
	close(lt.inner.conns)
	if _, err := lt.l.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Accept on a closed listener: %v", err)
	}
}

// TestConnectionsKeepTheirSocket: a connection taken from a TCP listener
// still gives access to its socket and can close its writing side, which
// the bus's header screen and the HTTP server use.
func TestConnectionsKeepTheirSocket(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := Listen(inner, 10, nil)
	defer ln.Close()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.(syscall.Conn).SyscallConn(); err != nil {
		t.Errorf("SyscallConn: %v", err)
	}
	if err := c.(interface{ CloseWrite() error }).CloseWrite(); err != nil {
		t.Fatalf("CloseWrite: %v", err)
	}
	if _, err := client.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Errorf("the client read %v after CloseWrite, want EOF", err)
	}
}

func TestCapacityLeavesFilesForTheRest(t *testing.T) {
	for _, tc := range []struct {
		files uint64
		want  int
	}{
		{0, 1},
		{1, 1},
		{100, 50},
		{128, 64},
		{256, 192},
		{1024, 960},
		{8192, 8128},
		{1 << 40, maxCapacity},
	} {
		if got := Capacity(tc.files); got != tc.want {
			t.Errorf("Capacity(%d) = %d, want %d", tc.files, got, tc.want)
		}
	}
	files, capacity, known := FileCapacity()
	if known && capacity != Capacity(files) || !known && capacity != UnknownCapacity {
		t.Errorf("FileCapacity() = %d, %d, %v", files, capacity, known)
	}
}
