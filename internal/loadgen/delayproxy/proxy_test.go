package delayproxy

import (
	"bytes"
	"io"
	"net"
	"testing"
	"time"
)

// echoServer accepts connections on loopback and writes back everything it
// reads, then closes its side when the client closes its own.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				io.Copy(c, c)
			}()
		}
	}()
	return ln.Addr().String()
}

// The proxy forwards bytes both ways unchanged and in order, passes on a
// half-close, and counts the connections it accepted.
func TestProxyForwardsBothWaysAndCounts(t *testing.T) {
	p, err := Start(echoServer(t), time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for i := range 2 {
		c, err := net.Dial("tcp", p.Addr())
		if err != nil {
			t.Fatal(err)
		}
		want := bytes.Repeat([]byte("0123456789"), 10_000) // several chunks
		go func() {
			c.Write(want)
			c.(*net.TCPConn).CloseWrite()
		}()
		c.SetReadDeadline(time.Now().Add(20 * time.Second))
		got, err := io.ReadAll(c)
		c.Close()
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("connection %d: got %d bytes back, want the %d sent", i, len(got), len(want))
		}
	}
	if n := p.Accepted(); n != 2 {
		t.Fatalf("accepted %d connections, want 2", n)
	}
}

// Closing the proxy ends the connections through it.
func TestProxyCloseEndsConnections(t *testing.T) {
	p, err := Start(echoServer(t), time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 1)
	c.SetReadDeadline(time.Now().Add(20 * time.Second))
	if _, err := io.ReadFull(c, buf); err != nil {
		t.Fatal(err)
	}
	p.Close() // returns only once its goroutines have
	if _, err := c.Read(buf); err == nil {
		t.Fatal("the connection still reads after the proxy closed")
	}
}
