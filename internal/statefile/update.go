package statefile

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/gofrs/flock"
)

// Update changes the file at path in one locked read-modify-write.
//
// It creates the folder of lockPath (mode 0700) when missing, takes an
// exclusive blocking lock on lockPath (creating the lock file, never
// truncating or deleting it), reads the current contents of path, and calls
// fn with them. exists is false and data is nil when path does not exist.
//
// What fn returns decides the outcome:
//   - an error: nothing is written and that error is returned as is, so
//     callers can match their own sentinels with [errors.Is];
//   - (nil, nil): no write is needed and the file is left alone; return a
//     non-nil empty slice to write an empty file;
//   - new contents: they replace the file through [WriteAtomic].
//
// The lock is released before Update returns. If it cannot be taken, the
// error wraps [ErrLock], fn is not called and the file is untouched. fn runs
// with the lock held, so it must not call Update for the same lock path; it
// should also be quick, since every other writer of the file waits for it.
func Update(path, lockPath string, fn func(data []byte, exists bool) ([]byte, error)) (err error) {
	unlock, err := Lock(lockPath)
	if err != nil {
		return err
	}
	defer func() {
		if uerr := unlock(); err == nil {
			err = uerr
		}
	}()

	data, exists, err := Read(path)
	if err != nil {
		return err
	}
	next, err := fn(data, exists)
	if err != nil {
		return err
	}
	if next == nil {
		return nil
	}
	return WriteAtomic(path, next)
}

// Lock takes the exclusive lock on lockPath that [Update] takes, and returns
// the function that releases it. It is for callers whose read-modify-write
// does not fit Update's shape, for example because they must run another
// step between computing the new contents and writing them, or must tell a
// failed write apart from a refused change. While holding the lock they use
// [Read] and [WriteAtomic] themselves.
//
// Lock creates the folder of lockPath (mode 0700) and the lock file when
// missing, and never truncates or deletes the lock file. It blocks until the
// lock is free; other goroutines of this process and other processes that
// lock the same path wait in turn. If the lock cannot be taken, the error
// wraps [ErrLock]. unlock must be called exactly once; it reports a failure
// to release the OS lock, and releases the in-process part in any case. Do
// not call Lock or Update for the same path while holding the lock: it
// would wait for itself.
func Lock(lockPath string) (unlock func() error, err error) {
	release := localLock(lockPath)
	if err := os.MkdirAll(filepath.Dir(lockPath), dirMode); err != nil {
		release()
		return nil, fmt.Errorf("%w: %s: %w", ErrLock, lockPath, err)
	}
	// A fresh handle per call: each call opens its own file description, so
	// the OS lock also excludes other handles within this process.
	fl := flock.New(lockPath)
	if err := fl.Lock(); err != nil {
		release()
		return nil, fmt.Errorf("%w: %s: %w", ErrLock, lockPath, err)
	}
	return func() error {
		defer release()
		if err := fl.Unlock(); err != nil {
			return fmt.Errorf("statefile: unlock %s: %w", lockPath, err)
		}
		return nil
	}, nil
}

// localLocks serializes goroutines of this process that lock the same path.
// OS locks already do so on Linux, macOS and Windows, where they belong to
// an open file; the mutex keeps that guarantee on systems where they belong
// to the whole process. Entries are reference counted and removed when no
// caller holds or waits for them, so the map stays as small as the number of
// paths in use.
var localLocks struct {
	mu sync.Mutex             // guards m and each entry's refs
	m  map[string]*localEntry // keyed by absolute lock path
}

type localEntry struct {
	mu   sync.Mutex // held by the caller that owns the lock path
	refs int        // callers holding or waiting for mu
}

// localLock locks the in-process mutex for lockPath and returns the function
// that unlocks it.
func localLock(lockPath string) (release func()) {
	key, err := filepath.Abs(lockPath)
	if err != nil {
		key = filepath.Clean(lockPath)
	}

	localLocks.mu.Lock()
	if localLocks.m == nil {
		localLocks.m = make(map[string]*localEntry)
	}
	e := localLocks.m[key]
	if e == nil {
		e = new(localEntry)
		localLocks.m[key] = e
	}
	e.refs++
	localLocks.mu.Unlock()

	e.mu.Lock()
	return func() {
		e.mu.Unlock()
		localLocks.mu.Lock()
		e.refs--
		if e.refs == 0 {
			delete(localLocks.m, key)
		}
		localLocks.mu.Unlock()
	}
}
