//go:build unix

package statefile

import (
	"os"
	"syscall"
)

// openRead opens path for reading without waiting: O_NONBLOCK makes the
// open of a FIFO return at once instead of waiting for a writer. It
// changes nothing for a regular file, whose reads never wait on it.
func openRead(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
}
