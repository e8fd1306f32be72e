//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package bus

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
// headers, or screenLimit bytes without one, and leaves every byte where
// it is. It returns why it stopped waiting otherwise: c's read deadline
// passed, the client closed the connection, or the socket failed; then
// what the client sent has been taken and dropped, so that closing the
// connection ends it cleanly. A connection without a socket to look at
// is handed on at once.
func awaitHeaders(c net.Conn) error {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	buf := make([]byte, screenBuffer)
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
			// The end may straddle what the last look found and what
			// arrived since.
			if headersEnd(buf[max(seen-2, 0):n]) {
				return true
			}
			seen = n
			if n < len(buf) {
				return false
			}
			if len(buf) >= screenLimit {
				return true
			}
			buf = make([]byte, 2*len(buf))
		}
	})
	if err == nil {
		err = lookErr
	}
	if err != nil {
		// Closing a socket with unread bytes makes the kernel reset the
		// connection; taken, they let the close end it as the HTTP
		// server would, with the client reading an end of stream.
		rc.Control(func(fd uintptr) { discard(int(fd), buf) })
	}
	return err
}

// discard reads and drops what the socket fd holds now, up to
// screenLimit bytes, without waiting for more.
func discard(fd int, buf []byte) {
	for taken := 0; taken < screenLimit; {
		n, err := syscall.Read(fd, buf)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if n <= 0 || err != nil {
			return
		}
		taken += n
	}
}
