package roster

import (
	"encoding/json"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/interlink-go/interlink/internal/wire"
)

// Log keeps a roster that several buses share, as a log of changes that
// every bus applies in the same order (package rosterlog keeps one in a
// JetStream key-value bucket).
//
// A bus with a Log writes every announcement and removal to the log
// and serves /roster from a local copy that only the log's changes touch.
// The copy follows the same rules as a bus's own roster (the bounds, the
// order of refreshes, which entry gives way), and since every bus applies
// the same changes in the same order, with the receipt time each change
// carries, every bus's copy ends up the same.
type Log interface {
	// Put stores value as the record of key and returns its revision,
	// its place in the log: higher than every earlier revision.
	Put(key string, value []byte) (rev uint64, err error)
	// Delete records that key has no record any more, and returns the
	// revision of that removal.
	Delete(key string) (rev uint64, err error)
	// Drop removes the record of revision rev, if it is still there,
	// without a change that watchers see: every bus has stopped using
	// it already.
	Drop(rev uint64) error
	// Watch calls apply with the records in the log, in revision order:
	// the last one of each key there now, then each change as it comes,
	// with a nil value for a removal, each revision at most once. Calls
	// end once stop has returned.
	Watch(apply func(rev uint64, key string, value []byte)) (stop func())
}

// sharedWait bounds how long an announcement or removal waits for its own
// change to come back through the log, so that the next /roster from the
// same bus shows it. A change that takes longer still counts: the log has
// it, and the copy catches up.
const sharedWait = 5 * time.Second

// sharedEvictions is how many revisions' evictions a shared roster keeps
// for the bus that wrote them to drop.
const sharedEvictions = 256

// Shared keeps a roster in a [Log] and serves it from a local [Roster],
// which only the log's changes touch. Make it with [Share].
//
// A record's value is the receipt time in Unix milliseconds, a space and
// the announcement's fields. Applying a record prunes with that time
// rather than the local clock, so that every bus evicts and prunes alike;
// listings hide expired entries by the local clock as always.
//
// Entries that give way to a record stay in the log until the bus that
// wrote the record drops them; a bus that starts later reads only what the
// log holds, so an entry left behind (its writer died first) can show on
// that bus alone until it expires, is refreshed or gives way.
type Shared struct {
	log    Log
	local  *Roster
	logger *slog.Logger
	end    func() // stops the watch

	mu       sync.Mutex
	applied  uint64              // guarded by mu; the highest revision applied
	progress chan struct{}       // guarded by mu; closed and replaced when applied grows
	evicted  map[uint64][]uint64 // guarded by mu; per revision, the revisions that gave way to it
	order    []uint64            // guarded by mu; the keys of evicted, oldest first
}

// Share starts watching log into local, which must be empty, and returns
// the shared roster that writes to log. Its warnings go to logger, which
// must not be nil. Stop the watch with [Shared.Stop].
func Share(local *Roster, log Log, logger *slog.Logger) *Shared {
	sr := &Shared{
		log:      log,
		local:    local,
		logger:   logger,
		progress: make(chan struct{}),
		evicted:  make(map[uint64][]uint64),
	}
	sr.end = log.Watch(sr.apply)
	return sr
}

// Stop ends the watch; the local copy stays as it is.
func (sr *Shared) Stop() { sr.end() }

// rosterRecord returns the value that carries an announcement received at
// at.
func rosterRecord(at int64, fields []byte) []byte {
	b := make([]byte, 0, 21+len(fields))
	b = strconv.AppendInt(b, at, 10)
	b = append(b, ' ')
	return append(b, fields...)
}

// parseRosterRecord reads a value that rosterRecord made. The fields must
// be the members of a JSON object, since /roster splices them in as they
// are; ok is false otherwise.
func parseRosterRecord(value []byte) (at int64, fields []byte, ok bool) {
	i := 0
	for i < len(value) && i < 18 && '0' <= value[i] && value[i] <= '9' {
		at = 10*at + int64(value[i]-'0')
		i++
	}
	if i == 0 || i >= len(value) || value[i] != ' ' || (value[0] == '0' && i > 1) {
		return 0, nil, false
	}
	fields = value[i+1:]
	if len(fields) == 0 || fields[0] != '"' {
		return 0, nil, false
	}
	obj := make([]byte, 0, len(fields)+2)
	obj = append(append(append(obj, '{'), fields...), '}')
	if !json.Valid(obj) {
		return 0, nil, false
	}
	return at, fields, true
}

// apply applies one change of the log to the local copy.
func (sr *Shared) apply(rev uint64, key string, value []byte) {
	var gone []*Entry
	switch at, fields, ok := parseRosterRecord(value); {
	case value == nil:
		sr.local.Remove(key)
	case !ok:
		sr.logger.Warn("roster record is not an announcement; ignored", "route", key, "revision", rev)
	default:
		// The record's own time, not the local clock, decides what
		// has expired, so that every bus prunes alike.
		gone, _ = sr.local.put(&Entry{key: key, fields: fields, at: at, rev: rev}, at)
	}
	sr.mu.Lock()
	defer sr.mu.Unlock()
	if len(gone) > 0 {
		revs := make([]uint64, len(gone))
		for i, e := range gone {
			revs[i] = e.rev
		}
		sr.evicted[rev] = revs
		sr.order = append(sr.order, rev)
		if len(sr.order) > sharedEvictions {
			delete(sr.evicted, sr.order[0])
			sr.order = sr.order[1:]
		}
	}
	if rev > sr.applied {
		sr.applied = rev
		close(sr.progress)
		sr.progress = make(chan struct{})
	}
}

// await waits until the change of revision rev is applied, for at most
// [sharedWait] or until done is closed, and returns the revisions that
// gave way to it. It reports false when it stopped waiting first.
func (sr *Shared) await(rev uint64, done <-chan struct{}) (evicted []uint64, seen bool) {
	timer := time.NewTimer(sharedWait)
	defer timer.Stop()
	for {
		sr.mu.Lock()
		if sr.applied >= rev {
			evicted = sr.evicted[rev]
			delete(sr.evicted, rev)
			sr.mu.Unlock()
			return evicted, true
		}
		progress := sr.progress
		sr.mu.Unlock()
		select {
		case <-progress:
		case <-timer.C:
			return nil, false
		case <-done:
			return nil, false
		}
	}
}

// Announce writes a, received at at (Unix ms), to the log and waits until the local
// copy has it. This bus wrote the record, so it also drops from the log
// the entries that gave way to it, which every bus has evicted already.
func (sr *Shared) Announce(a wire.Announce, at int64, done <-chan struct{}) error {
	rev, err := sr.log.Put(a.Key, rosterRecord(at, a.Fields))
	if err != nil {
		return err
	}
	evicted, seen := sr.await(rev, done)
	if !seen {
		sr.logger.Warn("announcement stored, but not seen back from the shared roster in time", "route", a.Key, "revision", rev)
	}
	for _, old := range evicted {
		if err := sr.log.Drop(old); err != nil {
			sr.logger.Warn("cannot drop an evicted roster record", "revision", old, "error", err)
		}
	}
	return nil
}

// Unregister writes the removal of key to the log and waits until the
// local copy has applied it. The removal is written even when the copy
// has no entry for key: the announcement may have gone through another bus
// and not be applied here yet, and it must not outlive a removal that
// came after it.
func (sr *Shared) Unregister(key string, done <-chan struct{}) error {
	rev, err := sr.log.Delete(key)
	if err != nil {
		return err
	}
	if _, seen := sr.await(rev, done); !seen {
		sr.logger.Warn("removal stored, but not seen back from the shared roster in time", "route", key, "revision", rev)
	}
	return nil
}
