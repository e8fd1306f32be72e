//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly || windows)

package bolt

import (
	"os"
	"time"
)

// lockFile does nothing here: this system has no lock that matches the one
// bbolt takes.
func lockFile(*os.File, time.Duration) (unlock func(), ok bool, err error) {
	return func() {}, true, nil
}

// lockChecks reports whether lockFile works here. Without it a file could
// be read while another process writes it, so it is not checked before
// opening.
const lockChecks = false
