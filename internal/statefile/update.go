package statefile

import (
	"context"
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
	return UpdateContext(context.Background(), path, lockPath, fn)
}

// UpdateContext is [Update] whose wait for the lock ends when ctx does: the
// error then wraps both [ErrLock] and ctx's error, fn is not called and the
// file is untouched. Once the lock is held, ctx no longer matters.
func UpdateContext(ctx context.Context, path, lockPath string, fn func(data []byte, exists bool) ([]byte, error)) (err error) {
	unlock, err := LockContext(ctx, lockPath)
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
	return LockContext(context.Background(), lockPath)
}

// LockContext is [Lock] whose wait ends when ctx does. The error then wraps
// both [ErrLock] and ctx's error, and nothing is held. A wait that ctx ends
// leaves nothing behind: should the lock be granted after all, it is
// released at once.
func LockContext(ctx context.Context, lockPath string) (unlock func() error, err error) {
	release, err := localLock(ctx, lockPath)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrLock, lockPath, err)
	}
	if err := os.MkdirAll(filepath.Dir(lockPath), dirMode); err != nil {
		release()
		return nil, fmt.Errorf("%w: %s: %w", ErrLock, lockPath, err)
	}
	// A fresh handle per call: each call opens its own file description, so
	// the OS lock also excludes other handles within this process.
	fl := flock.New(lockPath)
	if err := lockOS(ctx, fl, release); err != nil {
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

// lockOS takes the OS lock of fl, waiting until it is free or ctx ends. On
// failure it calls release (the in-process part) itself, possibly later: a
// blocking wait that ctx abandoned is finished in the background, and a
// lock it still obtains is given back at once.
func lockOS(ctx context.Context, fl *flock.Flock, release func()) error {
	got, err := fl.TryLock()
	if err != nil {
		release()
		return err
	}
	if got {
		return nil
	}
	// Wait in the kernel, not by polling, so the lock passes on as soon as
	// its holder lets go.
	done := make(chan error, 1)
	go func() { done <- fl.Lock() }()
	select {
	case err := <-done:
		if err != nil {
			release()
		}
		return err
	case <-ctx.Done():
		go func() {
			if err := <-done; err == nil {
				_ = fl.Unlock()
			}
			release()
		}()
		return ctx.Err()
	}
}

// localLocks serializes goroutines of this process that lock the same path.
// OS locks already do so on Linux, macOS and Windows, where they belong to
// an open file; the semaphore keeps that guarantee on systems where they belong
// to the whole process. Entries are reference counted and removed when no
// caller holds or waits for them, so the map stays as small as the number of
// paths in use.
var localLocks struct {
	mu sync.Mutex             // guards m and each entry's refs
	m  map[string]*localEntry // keyed by absolute lock path
}

type localEntry struct {
	sem  chan struct{} // holds a token while a caller owns the lock path
	refs int           // callers holding or waiting for sem
}

// localLock takes the in-process lock for lockPath, waiting until it is
// free or ctx ends, and returns the function that releases it.
func localLock(ctx context.Context, lockPath string) (release func(), err error) {
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
		e = &localEntry{sem: make(chan struct{}, 1)}
		localLocks.m[key] = e
	}
	e.refs++
	localLocks.mu.Unlock()

	drop := func() {
		localLocks.mu.Lock()
		e.refs--
		if e.refs == 0 {
			delete(localLocks.m, key)
		}
		localLocks.mu.Unlock()
	}
	select {
	case e.sem <- struct{}{}:
	case <-ctx.Done():
		drop()
		return nil, ctx.Err()
	}
	return func() {
		<-e.sem
		drop()
	}, nil
}
