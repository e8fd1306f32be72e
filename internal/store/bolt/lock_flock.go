//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package bolt

import (
	"errors"
	"os"
	"syscall"
	"time"
)

// lockFile takes the exclusive advisory lock bbolt takes on its file, on
// f's descriptor, trying until timeout. It reports false if another
// descriptor holds the lock all that time.
func lockFile(f *os.File, timeout time.Duration) (unlock func(), ok bool, err error) {
	fd := int(f.Fd())
	deadline := time.Now().Add(timeout)
	for {
		err := syscall.Flock(fd, syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { _ = syscall.Flock(fd, syscall.LOCK_UN) }, true, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, false, err
		}
		if time.Now().After(deadline) {
			return nil, false, nil
		}
		time.Sleep(lockRetry)
	}
}

// lockChecks reports whether lockFile works here, so that a file can be
// checked while no other process writes it.
const lockChecks = true
