// Package rostertest holds a roster log in memory for the tests of the
// roster and of the buses that share one.
package rostertest

import (
	"cmp"
	"slices"
	"sync"
)

// Log is a roster log (the roster package's Log) in memory that applies every change to every watch
// at once, in one order, as a JetStream bucket does more slowly.
type Log struct {
	mu      sync.Mutex
	rev     uint64                               // guarded by mu
	records map[string]Record                    // guarded by mu; the last of each key
	watches map[int]func(uint64, string, []byte) // guarded by mu
	nextID  int                                  // guarded by mu
	putErr  error                                // guarded by mu; returned by Put when set
	writes  int                                  // guarded by mu; Put and Delete calls that changed the log
	dropped []uint64                             // guarded by mu; what Drop removed
}

// Record is the last record of a key.
type Record struct {
	Rev   uint64
	Value []byte // nil: a removal
}

// New returns an empty log.
func New() *Log {
	return &Log{records: make(map[string]Record), watches: make(map[int]func(uint64, string, []byte))}
}

// FailPuts makes every later Put return err; nil lets them succeed again.
func (l *Log) FailPuts(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.putErr = err
}

// Record returns the last record of key, and whether there is one.
func (l *Log) Record(key string) (Record, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r, ok := l.records[key]
	return r, ok
}

// Writes returns how many Put and Delete calls changed the log.
func (l *Log) Writes() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.writes
}

// Dropped returns the revisions Drop removed, in order.
func (l *Log) Dropped() []uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.dropped)
}

func (l *Log) write(key string, value []byte) uint64 {
	l.rev++
	l.writes++
	l.records[key] = Record{Rev: l.rev, Value: value}
	for _, apply := range l.watches {
		apply(l.rev, key, value)
	}
	return l.rev
}

// Put stores value as the record of key.
func (l *Log) Put(key string, value []byte) (uint64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.putErr != nil {
		return 0, l.putErr
	}
	return l.write(key, slices.Clone(value)), nil
}

// Delete records the removal of key.
func (l *Log) Delete(key string) (uint64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.write(key, nil), nil
}

// Drop removes the record of revision rev, unseen by watches.
func (l *Log) Drop(rev uint64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for k, r := range l.records {
		if r.Rev == rev {
			delete(l.records, k)
			l.dropped = append(l.dropped, rev)
		}
	}
	return nil
}

// Watch calls apply with each key's last record in revision order, then
// with every change as it is made, until the returned stop is called.
func (l *Log) Watch(apply func(uint64, string, []byte)) func() {
	l.mu.Lock()
	defer l.mu.Unlock()
	keys := make([]string, 0, len(l.records))
	for k := range l.records {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int { return cmp.Compare(l.records[a].Rev, l.records[b].Rev) })
	for _, k := range keys {
		apply(l.records[k].Rev, k, l.records[k].Value)
	}
	id := l.nextID
	l.nextID++
	l.watches[id] = apply
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		delete(l.watches, id)
	}
}
