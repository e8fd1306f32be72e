//go:build windows

package bolt

import (
	"errors"
	"os"
	"time"

	"golang.org/x/sys/windows"
)

// lockRange is the byte range bbolt locks on Windows: one byte at offset
// 2^64-1, beyond any data, so the lock never blocks reads.
func lockRange() *windows.Overlapped {
	return &windows.Overlapped{Offset: ^uint32(0), OffsetHigh: ^uint32(0)}
}

// lockFile takes the exclusive lock bbolt takes on its file, on f's
// handle, trying until timeout. It reports false if another handle holds
// the lock all that time.
func lockFile(f *os.File, timeout time.Duration) (unlock func(), ok bool, err error) {
	h := windows.Handle(f.Fd())
	deadline := time.Now().Add(timeout)
	for {
		err := windows.LockFileEx(h, windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, lockRange())
		if err == nil {
			return func() { _ = windows.UnlockFileEx(h, 0, 1, 0, lockRange()) }, true, nil
		}
		if !errors.Is(err, windows.ERROR_LOCK_VIOLATION) {
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
