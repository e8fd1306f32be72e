package inbox

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"github.com/gofrs/flock"
)

// ErrSymlink reports an inbox file that is a symbolic link. The inbox never
// opens a file through a link: whoever could plant one in the state folder
// could otherwise make the server append to, truncate, or the listener
// print, a file of their choosing. Errors wrap it with the file's path.
var ErrSymlink = errors.New("file is a symbolic link")

// symlinkError is the error wrapping [ErrSymlink] for one path. It names
// the path itself, so a layer above adds its own context, not the path
// again.
type symlinkError struct {
	path string
	// changed: the file was replaced between its check and its opening.
	changed bool
}

func (e *symlinkError) Error() string {
	if e.changed {
		return e.path + " changed while it was opened; refusing it in case it is a symbolic link"
	}
	return e.path + " is a symbolic link; refusing to open it"
}

func (e *symlinkError) Unwrap() error { return ErrSymlink }

// wrap gives err the package's prefix and op, and path unless err names
// it already (a *fs.PathError or a link error for that path), so that each
// layer says what it adds once.
func wrap(op, path string, err error) error {
	if pe, ok := errors.AsType[*fs.PathError](err); ok && pe.Path == path {
		return fmt.Errorf("inbox: %s: %w", op, err)
	}
	if le, ok := errors.AsType[*symlinkError](err); ok && le.path == path {
		return fmt.Errorf("inbox: %s: %w", op, err)
	}
	return fmt.Errorf("inbox: %s %s: %w", op, path, err)
}

// openFile opens path like os.OpenFile without following a symbolic link in
// its last element; a link is an error wrapping [ErrSymlink]. See
// openNoFollow for how each platform does it.
func openFile(path string, flag int, perm fs.FileMode) (*os.File, error) {
	f, err := openNoFollow(path, flag, perm)
	if err != nil {
		return nil, linkError(path, err)
	}
	return f, nil
}

// linkError returns err, as an error wrapping [ErrSymlink] when path is a
// symbolic link (opening it with O_NOFOLLOW failed for that reason).
func linkError(path string, err error) error {
	if err != nil && !errors.Is(err, ErrSymlink) && isLink(path) {
		return &symlinkError{path: path}
	}
	return err
}

// isLink reports whether path is a symbolic link.
func isLink(path string) bool {
	st, err := os.Lstat(path)
	return err == nil && st.Mode()&fs.ModeSymlink != 0
}

// readFile reads the whole file at path through [openFile]. A missing file
// is reported as exists false.
func readFile(path string) (data []byte, exists bool, err error) {
	f, err := openFile(path, os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	data, err = io.ReadAll(f)
	if err != nil {
		return nil, false, err
	}
	return data, true, nil
}

// pathLocks serializes the goroutines of this process that take the lock
// of one path: on some systems an OS file lock belongs to the process, not
// to the open file, and would let them all in. It holds one mutex per lock
// path ever used, a handful per process.
var pathLocks sync.Map // absolute lock path → *sync.Mutex

// lockFile takes the exclusive OS lock on the lock file at path, creating
// it (and its folder) if missing but never through a symbolic link, and
// returns the function that releases it.
func lockFile(path string) (unlock func(), err error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, wrap("lock", path, err)
	}
	mv, _ := pathLocks.LoadOrStore(abs, new(sync.Mutex))
	mu := mv.(*sync.Mutex)
	mu.Lock()
	fl, err := newLock(abs)
	if err == nil {
		err = linkError(abs, fl.Lock())
	}
	if err != nil {
		mu.Unlock()
		return nil, wrap("lock", abs, err)
	}
	return func() {
		_ = fl.Unlock()
		mu.Unlock()
	}, nil
}

// newLock returns a lock on the file at path, whose folder it creates. The
// lock file is opened without following a symbolic link.
func newLock(path string) (*flock.Flock, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	if err := refuseLink(path); err != nil {
		return nil, err
	}
	return flock.New(path, flock.SetFlag(os.O_CREATE|os.O_RDWR|noFollowFlag)), nil
}
