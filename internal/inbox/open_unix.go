//go:build unix

package inbox

import (
	"io/fs"
	"os"
	"syscall"
)

// noFollowFlag makes open fail on a symbolic link in the last element of a
// path.
const noFollowFlag = syscall.O_NOFOLLOW

// openNoFollow opens path with O_NOFOLLOW, so the kernel refuses a symbolic
// link atomically.
func openNoFollow(path string, flag int, perm fs.FileMode) (*os.File, error) {
	return os.OpenFile(path, flag|syscall.O_NOFOLLOW, perm)
}

// refuseLink has nothing to check before a lock is opened: the lock is
// opened with O_NOFOLLOW.
func refuseLink(string) error { return nil }
