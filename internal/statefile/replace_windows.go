//go:build windows

package statefile

import (
	"errors"
	"os"
	"syscall"
	"time"
)

// Windows error codes of a file that is in use.
const (
	errorAccessDenied     = syscall.Errno(5)
	errorSharingViolation = syscall.Errno(32)
)

// replace renames tmp over path (MoveFileEx with MOVEFILE_REPLACE_EXISTING),
// retrying for up to half a second while another process holds path open.
func replace(tmp, path string) error {
	return renameRetry(func() error { return os.Rename(tmp, path) }, func(err error) bool {
		return errors.Is(err, errorAccessDenied) || errors.Is(err, errorSharingViolation)
	}, 50, 10*time.Millisecond)
}
