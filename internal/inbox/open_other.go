//go:build !unix

package inbox

import (
	"io/fs"
	"os"
)

// noFollowFlag is zero: the platform has no O_NOFOLLOW, and refuseLink and
// openNoFollow check for links instead.
const noFollowFlag = 0

// openNoFollow opens path, refusing a symbolic link (on Windows, any
// reparse point Go reports as one). Without O_NOFOLLOW the check cannot be
// atomic: the path is examined before it is opened, and the opened file must
// then be the same file that was examined, so a link swapped in between is
// caught as well. What remains is a link planted in the moment between
// finding no file and creating it; the state folder is the operator's, and
// the threat model counts whoever can write it as the operator.
func openNoFollow(path string, flag int, perm fs.FileMode) (*os.File, error) {
	before, err := os.Lstat(path)
	switch {
	case err == nil && before.Mode()&fs.ModeSymlink != 0:
		return nil, &symlinkError{path: path}
	case err != nil && !os.IsNotExist(err):
		return nil, err
	}
	f, err := os.OpenFile(path, flag, perm)
	if err != nil {
		return nil, err
	}
	after, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if before != nil && !os.SameFile(before, after) {
		f.Close()
		return nil, &symlinkError{path: path, changed: true}
	}
	return f, nil
}

// refuseLink refuses a lock file that is a symbolic link. The lock library
// opens the file itself, so this check comes just before; the lock file
// holds nothing, so a race here can at most create an empty file.
func refuseLink(path string) error {
	if st, err := os.Lstat(path); err == nil && st.Mode()&fs.ModeSymlink != 0 {
		return &symlinkError{path: path}
	}
	return nil
}
