package statefile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Errors returned by this package. Check them with [errors.Is].
var (
	// ErrLock reports that the lock on the sidecar lock file could not be
	// taken, for example because the lock path is a directory or its folder
	// cannot be created. The data file is left untouched.
	ErrLock = errors.New("statefile: lock failed")

	// ErrNotRegular reports a path that names something other than a
	// regular file: a FIFO, which would make a reader wait for a writer,
	// a device, which may never end, a folder or a socket. Nothing is
	// read from it.
	ErrNotRegular = errors.New("statefile: not a regular file")

	// ErrTooLarge reports a file larger than [MaxFileSize]. Nothing is
	// read from it.
	ErrTooLarge = errors.New("statefile: file too large")
)

// MaxFileSize is the largest file [Read] reads. It is far above what any
// state file holds when written by this program (a mailbox keeps at most
// 32 MiB of messages), and keeps a stray huge file from being read into
// memory whole.
const MaxFileSize = 1 << 30

// newFileMode is the mode of a file that [WriteAtomic] creates.
const newFileMode fs.FileMode = 0o600

// dirMode is the mode of a directory that this package creates.
const dirMode fs.FileMode = 0o700

// beforeRename, when set, is called with the temp file's path just before it
// is renamed over the target. Tests use it to stop the process at that point.
var beforeRename func(tmp string)

// Read returns the contents of the file at path without taking a lock. It
// relies on writers replacing the file by rename, so the bytes are always
// one complete version. A missing file gives (nil, false, nil).
//
// Read never waits on what it opens: the file is opened without blocking
// and read only when it is a regular file ([ErrNotRegular] otherwise) of at
// most [MaxFileSize] bytes ([ErrTooLarge] otherwise). So a FIFO or a device
// put where a state file belongs gets a clear error, not a process that
// hangs or fills its memory. Every error names the path, so a caller need
// not add it again.
func Read(path string) ([]byte, bool, error) {
	data, err := read(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, false, nil
	case errors.Is(err, ErrNotRegular), errors.Is(err, ErrTooLarge):
		return nil, false, err
	case err != nil:
		// An error of the file system names the path already.
		if pe, ok := errors.AsType[*fs.PathError](err); ok && pe.Path == path {
			return nil, false, fmt.Errorf("statefile: read: %w", err)
		}
		return nil, false, fmt.Errorf("statefile: read %s: %w", path, err)
	}
	return data, true, nil
}

func read(path string) ([]byte, error) {
	f, err := openRead(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: %s is %s", ErrNotRegular, path, fileType(fi.Mode()))
	}
	if fi.Size() > MaxFileSize {
		return nil, fmt.Errorf("%w: %s has %d bytes, limit %d", ErrTooLarge, path, fi.Size(), MaxFileSize)
	}
	// The file may grow between the stat and the read; read one byte past
	// the limit to tell.
	buf := bytes.NewBuffer(make([]byte, 0, fi.Size()+512))
	if _, err := buf.ReadFrom(io.LimitReader(f, MaxFileSize+1)); err != nil {
		return nil, err
	}
	if buf.Len() > MaxFileSize {
		return nil, fmt.Errorf("%w: %s has more than %d bytes", ErrTooLarge, path, MaxFileSize)
	}
	return buf.Bytes(), nil
}

// Check reports, without opening the file, what [Read] would refuse at
// path: something that is not a regular file ([ErrNotRegular]; a link is
// followed), or a file larger than [MaxFileSize] ([ErrTooLarge]). It
// returns nil otherwise, also when nothing is there or it cannot be looked
// at, which the reader that opens it then reports. Use it before handing
// path to a reader that opens files itself.
func Check(path string) error {
	fi, err := os.Stat(path)
	switch {
	case err != nil:
		return nil
	case !fi.Mode().IsRegular():
		return fmt.Errorf("%w: %s is %s", ErrNotRegular, path, fileType(fi.Mode()))
	case fi.Size() > MaxFileSize:
		return fmt.Errorf("%w: %s has %d bytes, limit %d", ErrTooLarge, path, fi.Size(), MaxFileSize)
	}
	return nil
}

// fileType names the kind of file m describes, for an error.
func fileType(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m.IsDir():
		return "a folder"
	case m&fs.ModeSocket != 0:
		return "a socket"
	}
	return "not a regular file"
}

// WriteAtomic replaces the file at path with data so that readers see either
// the old or the new contents, and a crash leaves one of the two in place.
//
// It creates the parent directory (mode 0700) when missing, writes data to a
// temp file in that directory, syncs and closes it, and renames it over
// path. An existing file's permission bits are kept; a new file gets 0600.
// On Unix the directory is synced after the rename so the new name is
// durable. On failure before the rename the temp file is removed and the
// target is untouched; if only the final directory sync fails, the new
// contents are already in place but may not survive a power loss.
//
// WriteAtomic takes no lock; use [Update] when other writers may race.
func WriteAtomic(path string, data []byte) error {
	if err := writeAtomic(path, data); err != nil {
		return fmt.Errorf("statefile: write %s: %w", path, err)
	}
	return nil
}

func writeAtomic(path string, data []byte) (err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	if err := os.MkdirAll(dir, dirMode); err != nil {
		return err
	}

	perm := newFileMode
	switch fi, err := os.Stat(path); {
	case err == nil:
		perm = fi.Mode().Perm()
	case !errors.Is(err, fs.ErrNotExist):
		return err
	}

	tmp, err := os.CreateTemp(dir, "."+base+".tmp*")
	if err != nil {
		return err
	}
	tmpName := tmp.Name()
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmpName)
		}
	}()

	// CreateTemp asks for 0600, but the umask may have taken bits away, so
	// set the mode explicitly.
	if err := tmp.Chmod(perm); err != nil {
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if beforeRename != nil {
		beforeRename(tmpName)
	}
	if err := replace(tmpName, path); err != nil {
		return err
	}
	return syncDir(dir)
}

// LockPath returns the sidecar lock file for the data file at path: path
// with its final extension replaced by ext, or with "." + ext appended when
// it has none. A leading dot in the file name does not start an extension.
//
//	LockPath("/a/peers.json", "json.lock") // "/a/peers.json.lock"
//	LockPath("/a/s1.json", "lock")         // "/a/s1.lock"
//	LockPath("/a/queue", "lock")           // "/a/queue.lock"
//
// peers.json uses ext "json.lock" and every other state file uses "lock";
// other implementations sharing the same folders expect these names.
func LockPath(path, ext string) string {
	stem := path
	if e := filepath.Ext(path); e != "" && !isDotFileName(path, e) {
		stem = strings.TrimSuffix(path, e)
	}
	return stem + "." + ext
}

// isDotFileName reports whether the extension e found in path is really the
// whole file name, as in ".config".
func isDotFileName(path, e string) bool {
	return len(filepath.Base(path)) == len(e)
}
