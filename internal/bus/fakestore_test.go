package bus

import (
	"strings"
	"sync"

	"github.com/interlink-go/interlink/internal/store"
)

// fakeStore is a small in-memory [store.Store] for tests. Its sequence
// starts at 1, so keys are predictable (the golden fixtures rely on that),
// and it can be told to fail, which the real stores cannot.
type fakeStore struct {
	mu     sync.Mutex
	cap    int
	seq    uint64
	queues map[string][]store.Entry // guarded by mu
	closed bool

	// Errors returned by the next calls, when set. Guarded by mu.
	enqueueErr, peekErr, deleteErr error
}

// newFakeStore returns an empty fake holding at most capacity entries per
// route; 0 means [store.DefaultCap].
func newFakeStore(capacity int) *fakeStore {
	if capacity == 0 {
		capacity = store.DefaultCap
	}
	return &fakeStore{cap: capacity, queues: make(map[string][]store.Entry)}
}

func (f *fakeStore) Enqueue(route string, value []byte) (string, int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return "", 0, store.ErrClosed
	}
	if f.enqueueErr != nil {
		return "", 0, f.enqueueErr
	}
	f.seq++
	key := store.Key(route, f.seq)
	q := append(f.queues[route], store.Entry{Key: key, Value: append([]byte(nil), value...)})
	dropped := max(len(q)-f.cap, 0)
	f.queues[route] = q[dropped:]
	return key, dropped, nil
}

func (f *fakeStore) Peek(route string) (store.Entry, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return store.Entry{}, false, store.ErrClosed
	}
	if f.peekErr != nil {
		return store.Entry{}, false, f.peekErr
	}
	q := f.queues[route]
	if len(q) == 0 {
		return store.Entry{}, false, nil
	}
	return store.Entry{Key: q[0].Key, Value: append([]byte(nil), q[0].Value...)}, true, nil
}

func (f *fakeStore) Delete(key string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return store.ErrClosed
	}
	if f.deleteErr != nil {
		return f.deleteErr
	}
	i := strings.LastIndexByte(key, 0)
	if i < 0 {
		return nil
	}
	route := key[:i]
	q := f.queues[route]
	for j, e := range q {
		if e.Key == key {
			f.queues[route] = append(q[:j:j], q[j+1:]...)
			break
		}
	}
	if len(f.queues[route]) == 0 {
		delete(f.queues, route)
	}
	return nil
}

func (f *fakeStore) Depth(route string) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return 0, store.ErrClosed
	}
	return len(f.queues[route]), nil
}

func (f *fakeStore) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	return nil
}

// put stores value under key as is, bypassing the envelope the bus builds.
func (f *fakeStore) put(route, key string, value []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.queues[route] = append(f.queues[route], store.Entry{Key: key, Value: value})
}

// fail makes the named operations return err until it is called again
// with nil.
func (f *fakeStore) fail(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.enqueueErr, f.peekErr, f.deleteErr = err, err, err
}

// recordingStore wraps a store and remembers every key Enqueue returned.
type recordingStore struct {
	store.Store
	mu   sync.Mutex
	keys []string // guarded by mu
}

func (r *recordingStore) Enqueue(route string, value []byte) (string, int, error) {
	key, dropped, err := r.Store.Enqueue(route, value)
	if err == nil {
		r.mu.Lock()
		r.keys = append(r.keys, key)
		r.mu.Unlock()
	}
	return key, dropped, err
}

func (r *recordingStore) enqueued() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.keys...)
}
