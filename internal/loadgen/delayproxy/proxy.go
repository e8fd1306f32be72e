// Package delayproxy is a TCP proxy on 127.0.0.1 that delays every byte
// by a one-way latency, so that a load run on one machine sees the round
// trips of a network path.
package delayproxy

import (
	"bytes"
	"errors"
	"io"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"time"
)

// MaxDelay is the longest one-way delay a proxy is meant for.
const MaxDelay = 10 * time.Second

// proxyChunk is the most bytes the proxy reads at once.
const proxyChunk = 32 << 10

// Proxy is a TCP proxy on 127.0.0.1 that forwards every connection to
// one target and delays each byte by the same one-way latency in both
// directions, as a network path of that delay would. Data keeps flowing
// while earlier data waits out its delay, so the delay adds latency, not a
// bandwidth limit. It counts the connections it accepted.
//
// The kernel completes the proxy's TCP handshake at once, but over a real
// path of that latency a client can send only a round trip after it began
// to connect. So bytes from the client are forwarded no earlier than two
// delays after the connection was accepted (then take their own delay),
// which makes a new connection cost what it costs on the network: one
// round trip more than a request on a kept connection.
type Proxy struct {
	ln     net.Listener
	target string
	delay  time.Duration

	accepted atomic.Int64 // connections accepted so far; see Accepted

	mu     sync.Mutex
	conns  map[net.Conn]struct{} // guarded by mu; open connections, both sides
	closed bool                  // guarded by mu
	wg     sync.WaitGroup
}

// Start listens on a free port of 127.0.0.1 and forwards to target, a
// host:port.
func Start(target string, delay time.Duration) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, target: target, delay: delay, conns: make(map[net.Conn]struct{})}
	p.wg.Go(p.accept)
	return p, nil
}

// Addr returns the address clients connect to.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Close stops accepting, closes every connection and waits for the
// proxy's goroutines.
func (p *Proxy) Close() {
	p.mu.Lock()
	p.closed = true
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.ln.Close()
	p.wg.Wait()
}

// track records c as open; it reports false, closing c, once the proxy is
// closed.
func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		c.Close()
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.conns, c)
	c.Close()
}

func (p *Proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return // closed
		}
		p.accepted.Add(1)
		if !p.track(c) {
			return
		}
		p.wg.Go(func() { p.serve(c) })
	}
}

// serve connects c to the target and forwards both ways until both
// directions are done.
func (p *Proxy) serve(c net.Conn) {
	defer p.untrack(c)
	t, err := net.DialTimeout("tcp", p.target, 5*time.Second)
	if err != nil || !p.track(t) {
		return
	}
	defer p.untrack(t)
	connected := time.Now().Add(2 * p.delay) // when the handshake would finish
	var wg sync.WaitGroup
	wg.Go(func() { p.pipe(t, c, connected) })
	wg.Go(func() { p.pipe(c, t, time.Time{}) })
	wg.Wait()
}

// chunk is data read at one moment, to be written at due.
type chunk struct {
	data []byte
	due  time.Time
}

// pipe copies src to dst, each chunk delay after it was read, or after
// notBefore if that is later. When src ends, dst's write side is closed
// once everything before has been written; a write error closes both.
func (p *Proxy) pipe(dst, src net.Conn, notBefore time.Time) {
	queue := make(chan chunk, 256)
	var wg sync.WaitGroup
	wg.Go(func() {
		for ch := range queue {
			if d := time.Until(ch.due); d > 0 {
				time.Sleep(d)
			}
			if _, err := dst.Write(ch.data); err != nil {
				src.Close()
				for range queue {
				}
				return
			}
		}
		if tc, ok := dst.(*net.TCPConn); ok {
			tc.CloseWrite()
		} else {
			dst.Close()
		}
	})
	buf := make([]byte, proxyChunk)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			sent := time.Now()
			if sent.Before(notBefore) {
				sent = notBefore
			}
			queue <- chunk{data: bytes.Clone(buf[:n]), due: sent.Add(p.delay)}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				dst.Close()
			}
			break
		}
	}
	close(queue)
	wg.Wait()
}

// For starts a proxy with the given delay in front of the bus at
// base and returns it with the URL that reaches the bus through it.
func For(base string, delay time.Duration) (*Proxy, string, error) {
	u, err := url.Parse(base)
	if err != nil {
		return nil, "", err
	}
	target := u.Host
	if u.Port() == "" {
		target = net.JoinHostPort(u.Hostname(), "80")
	}
	p, err := Start(target, delay)
	if err != nil {
		return nil, "", err
	}
	u.Host = p.Addr()
	return p, u.String(), nil
}

// Accepted returns how many connections the proxy has accepted.
func (p *Proxy) Accepted() int64 { return p.accepted.Load() }
