// Package bolt is the [store.Store] kept in a bbolt database file, so that
// queues and the sequence survive restarts.
//
// # Writes
//
// [Store.Enqueue] returns once the transaction holding its entry has
// committed with fsync: when Enqueue returns without error, the entry is on
// disk. An enqueue that finds no commit in progress writes its own
// transaction at once. Enqueues that arrive while a commit is being written
// go to a goroutine of the store, the writer, which puts all that wait into
// the next transaction, so concurrent senders share the cost of the fsync
// without any added delay. The writer also commits acknowledgements.
//
// An enqueue is part of one transaction that takes the next sequence number,
// stores the entry and drops the oldest entries of the route while it holds
// more than the cap or the per-route bytes, so a crash never leaves a queue
// over its bounds because of a half-done send. Whether the enqueue fits in
// the total bytes is decided first, from the cached sizes, and a refused
// enqueue changes nothing; the other enqueues of its transaction go ahead.
// Bounds lowered between runs are enforced lazily: a queue keeps its
// excess until the next enqueue to it trims it, and a store over its new
// total refuses every enqueue until deletes make room.
//
// # Acknowledgements
//
// [Store.Delete] does not wait for a commit. It marks the entry acknowledged
// in memory and returns; from then on [Store.Peek] skips the entry and
// [Store.Depth] does not count it. The writer deletes every acknowledged
// entry in its next transaction: the next enqueue's, or, when no enqueue
// comes within [Options.AckDelay], one of their own. So a sequential
// send, receive and acknowledge costs one commit per message, not two. A
// crash loses at most the acknowledgements of the last AckDelay, whose
// entries are delivered again after the restart; receivers drop those as
// replays of messages they have. [Store.Close] commits the acknowledgements
// still waiting.
//
// Acknowledged entries count for nothing: an enqueue deletes them before it
// applies the cap, so they never make a full queue drop an unacknowledged
// entry, and a drop is reported only for entries nobody acknowledged.
//
// # Reads
//
// Peek reads in a read-only transaction and copies the entry out of it. The
// number of entries and bytes per route is cached in memory, so enqueue and
// Depth need not count a queue. [Open] builds the cache with one scan of
// every key and the length of its value, which makes opening linear in the
// number of stored entries.
//
// # Damaged files
//
// bbolt trusts the file it maps: a damaged one can make it panic, fault on
// memory past the end of the file, or allocate without bound, in places
// no caller can recover from. [Open] therefore checks an existing file
// before bbolt reads it (see preflight.go), and refuses a damaged one with
// a [*CorruptError], leaving it exactly as it was. A file that changes
// under a running store (another program wrote it) fails the operation
// that finds it with a *CorruptError, and [Store.Failed] tells the caller
// that the store can serve no more.
package bolt

import (
	"errors"
	"fmt"
	"time"

	"github.com/interlink-go/interlink/internal/store"
)

// Errors returned by [Open] and by a [Store], beside those of package
// store. Callers compare them with [errors.Is].
var (
	// ErrLocked is returned by [Open] when another process (or another
	// open [Store] in this one) holds the database file.
	ErrLocked = errors.New("store: another process holds the database")
	// ErrCorrupt is wrapped by every [*CorruptError]: a database file that
	// is damaged, cut short or not a database at all.
	ErrCorrupt = errors.New("store: damaged database file")
)

// CorruptError reports a database file that cannot be used as it is, found
// by [Open] or by a [Store] while it runs. It wraps [ErrCorrupt].
type CorruptError struct {
	// Path is the database file.
	Path string
	// Detail says what is wrong, in a phrase.
	Detail string
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("store: %s is damaged: %s", e.Path, e.Detail)
}

func (e *CorruptError) Unwrap() error { return ErrCorrupt }

// Options holds the settings of [Open]. A nil *Options, like its zero
// value, means defaults.
type Options struct {
	// Options holds the cap, the byte bounds and the logger; the store
	// does not use its clock.
	store.Options
	// ObserveCommit, if set, is told how long each write took from its
	// start to its commit on disk, batching included. It must return
	// quickly.
	ObserveCommit func(time.Duration)
	// AckDelay is how long acknowledged deletes wait for an enqueue to
	// share its commit before the store commits them on their own; a
	// crash can undo the acknowledgements of about this long. Zero means
	// [DefaultAckDelay]; a negative value commits them as soon as the
	// writer is free.
	AckDelay time.Duration
}

// DefaultAckDelay is the default of [Options.AckDelay].
const DefaultAckDelay = 100 * time.Millisecond

func (o *Options) base() *store.Options {
	if o == nil {
		return nil
	}
	return &o.Options
}

func (o *Options) ackDelay() time.Duration {
	switch {
	case o == nil || o.AckDelay == 0:
		return DefaultAckDelay
	case o.AckDelay < 0:
		return 0
	}
	return o.AckDelay
}

func (o *Options) observeCommit() func(time.Duration) {
	if o == nil {
		return nil
	}
	return o.ObserveCommit
}
