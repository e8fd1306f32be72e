package statefile

import (
	"bytes"
	"context"
	"sync"
)

// Locked takes the lock on lockPath as [LockContext] does, runs fn while
// holding it, and releases it. It returns fn's error, else the error of
// releasing the lock; a lock it cannot take is an error wrapping [ErrLock],
// and fn does not run. fn must not take the same lock.
func Locked(ctx context.Context, lockPath string, fn func() error) (err error) {
	unlock, err := LockContext(ctx, lockPath)
	if err != nil {
		return err
	}
	defer func() {
		if uerr := unlock(); err == nil {
			err = uerr
		}
	}()
	return fn()
}

// Cache remembers the value the contents of a file decoded to, with those
// exact bytes, so that a reader who reads the same bytes again skips
// decoding them. The bytes are compared in full, never trusted by size or
// time. Values go in and out as clones, so no caller shares one with
// another. A Cache is safe for concurrent use; the zero value is not ready,
// use [NewCache].
type Cache[T any] struct {
	clone func(T) T // fixed at creation

	mu   sync.Mutex
	data []byte // the bytes last remembered; nil when none; guarded by mu
	val  T      // what data decoded to; guarded by mu
}

// NewCache returns an empty Cache whose values are copied with clone.
func NewCache[T any](clone func(T) T) *Cache[T] {
	return &Cache[T]{clone: clone}
}

// Get returns a clone of the value data decoded to when data are the bytes
// last remembered.
func (c *Cache[T]) Get(data []byte) (T, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.data == nil || !bytes.Equal(c.data, data) {
		var zero T
		return zero, false
	}
	return c.clone(c.val), true
}

// Put remembers a clone of v as what data decode to. data must not change
// afterwards.
func (c *Cache[T]) Put(data []byte, v T) {
	v = c.clone(v)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.data, c.val = data, v
}
