//go:build !linux

package runlock

import (
	"io/fs"

	"github.com/gofrs/flock"
)

// held tries the lock at path and gives it back at once.
func held(path string, _ fs.FileInfo) (bool, error) {
	l := flock.New(path)
	got, err := l.TryLock()
	if err != nil {
		return false, err
	}
	if got {
		return false, l.Unlock()
	}
	return true, nil
}
