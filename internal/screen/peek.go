//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package screen

import (
	"errors"
	"io"
	"net"
	"syscall"
)

// canPeek says that awaitHeaders works here: the socket can be read
// without taking the bytes, and Go's poller wakes a waiting reader only
// when more bytes arrive, not while unread ones remain.
const canPeek = true

// awaitHeaders waits until the socket under c holds the end of a request's
// headers, and leaves every byte where it is. It returns
// errHeadersTooLarge when maxBytes have arrived without the end,
// and otherwise why it stopped waiting: c's read deadline passed, the
// client closed the connection, or the socket failed. A connection
// without a socket to look at is handed on at once.
func awaitHeaders(c net.Conn, maxBytes int) error {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	buf := make([]byte, min(screenBuffer, maxBytes))
	seen := 0 // bytes the last look found
	var lookErr error
	err = rc.Read(func(fd uintptr) bool {
		for {
			n, _, err := syscall.Recvfrom(int(fd), buf, syscall.MSG_PEEK)
			switch {
			case errors.Is(err, syscall.EINTR):
				continue
			case errors.Is(err, syscall.EAGAIN):
				return false // wait for more bytes
			case err != nil:
				lookErr = err
				return true
			case n == 0:
				lookErr = io.EOF
				return true
			}
			if buf[0] == tlsHandshake {
				lookErr = errTLSHandshake
				return true
			}
			// The end may straddle what the last look found and what
			// arrived since.
			if headersEnd(buf[max(seen-2, 0):n]) {
				return true
			}
			seen = n
			if n < len(buf) {
				return false
			}
			if len(buf) >= maxBytes {
				lookErr = errHeadersTooLarge
				return true
			}
			buf = make([]byte, min(2*len(buf), maxBytes))
		}
	})
	if err == nil {
		err = lookErr
	}
	return err
}

// drainLimit bounds what drain takes from a socket.
const drainLimit = 64 << 10

// drain reads and drops what the socket under c holds now, up to
// drainLimit bytes, without waiting for more.
func drain(c net.Conn) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return
	}
	buf := make([]byte, 4096)
	rc.Control(func(fd uintptr) {
		for taken := 0; taken < drainLimit; {
			n, err := syscall.Read(int(fd), buf)
			if errors.Is(err, syscall.EINTR) {
				continue
			}
			if n <= 0 || err != nil {
				return
			}
			taken += n
		}
	})
}
