//go:build unix

package statefile

import (
	"errors"
	"os"
	"syscall"
)

// syncDir flushes the directory entry of a just renamed file to disk.
// Filesystems that cannot sync a directory report EINVAL or ENOTSUP; there
// is nothing more to do on them, so those errors are ignored.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOTSUP) {
		err = nil
	}
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
