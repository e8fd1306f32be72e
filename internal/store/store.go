// Package store keeps the bus's message queues: one FIFO queue per route,
// bounded, with the oldest entry dropped when a queue is full.
//
// # Bounds
//
// A queue holds at most [Options.Cap] entries and [Options.RouteBytes]
// bytes, and all queues together at most [Options.TotalBytes] bytes, each
// entry counted by [EntrySize]. An enqueue that would take a queue past
// its own bounds drops that queue's oldest entries, as the original bus
// did for its count; one that would take the store past its total is
// refused with an error wrapping [ErrFull], and nothing changes. The
// JetStream store has no per-route byte bound; see [NATS].
//
// There are three implementations of [Store]: [Memory], which loses
// everything when the process ends; [Bolt], a bbolt file that survives
// restarts; and [NATS], a NATS JetStream stream that several processes can
// share and that a JetStream cluster replicates. The bus uses any of them
// through the interface, and the same conformance tests run against all.
//
// Stores may offer more through optional interfaces: [Totaler] counts what
// all queues hold; [Watcher] tells of messages that other processes stored
// in a shared store, [Health] whether a store that lives behind a
// connection can serve now, and [ValueLimiter] how long a value may be
// when something other than the byte bounds limits it. The JetStream
// store implements all four, and
// keeps the bus roster's records for every process on its stream
// ([NATS.OpenRoster]).
//
// # Keys
//
// Every stored entry has a key of the form
//
//	route + "\x00" + 20 decimal digits of a sequence number
//
// The sequence is global across routes and only grows, so keys of one route
// sort in arrival order. The key is also the ack key the bus hands to
// clients, so it must stay byte-identical for the lifetime of the entry.
package store

import (
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"
)

// DefaultCap is the default number of entries a queue holds.
const DefaultCap = 1024

// Default byte bounds, for [Options.RouteBytes] and [Options.TotalBytes].
// A route holds three of the bus's largest messages (2 MiB each), or
// its cap of 1,024 messages of up to 8 KiB; all queues together hold 128
// MiB (SECURITY.md gives the memory a full bus takes).
const (
	DefaultRouteBytes = 8 << 20
	DefaultTotalBytes = 128 << 20
)

// EntryOverhead is what [EntrySize] adds to every entry for what storing
// it costs beyond its bytes: in memory the entry's slot, its allocations
// rounded up to their size class and, for a route's only entry, the
// route's own map slot and queue. With it, a store in memory filled with
// the smallest messages, each on a route of its own, holds no more heap
// than the bytes counted (BenchmarkMemoryHeapPerCountedByte measures it).
const EntryOverhead = 176

// EntrySize returns the bytes an entry of route with a value of valueLen
// bytes counts for against the byte bounds: its key ([Key]), its value,
// the route once more (a store keeps the route's name beside its queue,
// and one entry may be all a route has) and [EntryOverhead].
func EntrySize(route string, valueLen int) int64 {
	return int64(2*len(route)+1+seqDigits+valueLen) + EntryOverhead
}

// Errors returned by the stores. Callers compare them with [errors.Is].
var (
	// ErrClosed is returned by every method after [Store.Close].
	ErrClosed = errors.New("store: closed")
	// ErrLocked is returned by [OpenBolt] when another process (or another
	// open [Bolt] in this one) holds the database file.
	ErrLocked = errors.New("store: another process holds the database")

	// ErrUnreachable is returned by [OpenNATS] when no NATS server answers
	// at the URL, and by the methods of [NATS] while the connection is down
	// (it comes back on its own when a server is reachable again).
	ErrUnreachable = errors.New("store: NATS server unreachable")
	// ErrNoJetStream is returned by [OpenNATS] when the server, or the
	// account the connection uses, has JetStream disabled.
	ErrNoJetStream = errors.New("store: JetStream not enabled")
	// ErrStreamConfig is returned by [OpenNATS] when the stream exists with
	// settings the store cannot work with, or cannot be created because its
	// subjects overlap another stream's. A [*StreamConfigError] carries the
	// differing settings.
	ErrStreamConfig = errors.New("store: stream settings do not fit")
	// ErrPayloadLimit is returned by [OpenNATS] when the server's
	// max_payload leaves less than [NATSOptions.MinValue], and wrapped by
	// the [*BoundError] of an enqueue of a value longer than
	// [NATS.MaxValue].
	ErrPayloadLimit = errors.New("store: value above the NATS server's max_payload")
	// ErrCorrupt is wrapped by every [*CorruptError]: a database file that
	// is damaged, cut short or not a database at all.
	ErrCorrupt = errors.New("store: damaged database file")

	// ErrFull is wrapped by the [*BoundError] of an enqueue refused
	// because the store would hold more than [Options.TotalBytes]. Nothing
	// was stored or dropped; the same enqueue can succeed once entries
	// have been deleted.
	ErrFull = errors.New("store: queues full")
	// ErrTooLarge is wrapped by the [*BoundError] of an enqueue refused
	// because the entry alone is larger than [Options.RouteBytes], so no
	// queue can ever take it.
	ErrTooLarge = errors.New("store: entry larger than a queue may hold")
)

// BoundError reports an enqueue refused by a byte bound. It wraps
// [ErrFull], [ErrTooLarge] or [ErrPayloadLimit].
type BoundError struct {
	// Err is ErrFull, ErrTooLarge or ErrPayloadLimit.
	Err error
	// Bound is the bound that refused it, in bytes: [Options.TotalBytes]
	// for ErrFull, [Options.RouteBytes] for ErrTooLarge, the largest
	// value the store takes ([NATS.MaxValue]) for ErrPayloadLimit.
	Bound int64
	// Size is the entry's size as [EntrySize] counts it; for
	// ErrPayloadLimit, the value's length.
	Size int64
}

func (e *BoundError) Error() string {
	switch {
	case errors.Is(e.Err, ErrTooLarge):
		return fmt.Sprintf("%v: it counts %d bytes, a queue holds at most %d", e.Err, e.Size, e.Bound)
	case errors.Is(e.Err, ErrPayloadLimit):
		return fmt.Sprintf("%v: a value of %d bytes, the server takes at most %d", e.Err, e.Size, e.Bound)
	}
	return fmt.Sprintf("%v: an entry of %d bytes would take the queues past their total bound of %d bytes", e.Err, e.Size, e.Bound)
}

func (e *BoundError) Unwrap() error { return e.Err }

// CorruptError reports a database file that cannot be used as it is, found
// by [OpenBolt] or by a [Bolt] while it runs. It wraps [ErrCorrupt].
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

// Options holds the settings shared by [NewMemory], [OpenBolt] and
// [OpenNATS] (through [NATSOptions]). A nil
// *Options, like its zero value, means defaults.
type Options struct {
	// Cap is the most entries one route's queue holds. Zero or less means
	// [DefaultCap]. Callers that accept a configured 0 clamp it to 1
	// themselves.
	Cap int
	// RouteBytes is the most bytes one route's queue holds, as
	// [EntrySize] counts them; an enqueue drops the route's oldest entries
	// until it fits, and refuses an entry larger than this with
	// [ErrTooLarge]. Zero or less means [DefaultRouteBytes]; above
	// TotalBytes it is TotalBytes. [NATS] applies only the second part.
	RouteBytes int64
	// TotalBytes is the most bytes all queues hold together; an enqueue
	// that would go past it is refused with [ErrFull]. Zero or less means
	// [DefaultTotalBytes]. For [NATS] it is the stream's max_bytes, which
	// the server counts in its own way.
	TotalBytes int64
	// Now returns the current time; nil means [time.Now]. [Memory] uses it
	// once, to seed its sequence, and [NATS] to set the first sequence of
	// a stream it creates.
	Now func() time.Time
	// Logger receives the store's few log events; nil discards them. The
	// stores do not log dropped entries: [Store.Enqueue] returns the count
	// and the caller decides how to report it.
	Logger *slog.Logger
	// ObserveCommit, if set, is told how long each write of [Bolt] took
	// from its start to its commit on disk, batching included. Other
	// stores do not call it. It must return quickly.
	ObserveCommit func(time.Duration)
	// AckDelay is how long [Bolt] lets acknowledged deletes wait for an
	// enqueue to share its commit before it commits them on their own; a
	// crash can undo the acknowledgements of about this long. Zero means
	// [DefaultAckDelay]; a negative value commits them as soon as the
	// writer is free. The other stores ignore it.
	AckDelay time.Duration
}

// DefaultAckDelay is the default of [Options.AckDelay].
const DefaultAckDelay = 100 * time.Millisecond

func (o *Options) ackDelay() time.Duration {
	switch {
	case o == nil || o.AckDelay == 0:
		return DefaultAckDelay
	case o.AckDelay < 0:
		return 0
	}
	return o.AckDelay
}

func (o *Options) capacity() int {
	if o == nil || o.Cap <= 0 {
		return DefaultCap
	}
	return o.Cap
}

// Bounds returns the byte bounds of o with defaults applied: the most one
// route holds, and the most all routes hold.
func (o *Options) Bounds() (route, total int64) {
	route, total = DefaultRouteBytes, DefaultTotalBytes
	if o != nil && o.TotalBytes > 0 {
		total = o.TotalBytes
	}
	if o != nil && o.RouteBytes > 0 {
		route = o.RouteBytes
	}
	return min(route, total), total
}

func (o *Options) now() time.Time {
	if o == nil || o.Now == nil {
		return time.Now()
	}
	return o.Now()
}

func (o *Options) logger() *slog.Logger {
	if o == nil || o.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return o.Logger
}

// Entry is one stored message.
type Entry struct {
	// Key is the entry's storage key, which is also its ack key.
	Key string
	// Value is the stored bytes: the envelope JSON the bus built.
	Value []byte
}

// Store is a set of bounded FIFO queues keyed by route. Implementations are
// safe for concurrent use.
type Store interface {
	// Enqueue appends value to the queue of route and then drops the
	// oldest entries of that queue until it holds at most the store's cap
	// and its per-route byte bound, as one atomic step. It returns the
	// new entry's key and how many entries were dropped. When it returns
	// without error the entry is as durable as the implementation makes
	// it (on disk, for Bolt). When the store would then hold more than its
	// total byte bound, it changes nothing and returns a [*BoundError]
	// wrapping [ErrFull]; see [Options] for the bounds.
	Enqueue(route string, value []byte) (key string, dropped int, err error)
	// Peek returns the oldest entry of route's queue without removing it,
	// and false when the queue is empty.
	Peek(route string) (Entry, bool, error)
	// Delete removes the entry with exactly this key: once it returns,
	// Peek and Depth no longer see it. Deleting a key that is not there is
	// not an error. [Bolt] may commit the deletion to disk after it
	// returns; see its documentation.
	Delete(key string) error
	// Depth returns the number of entries in route's queue.
	Depth(route string) (int, error)
	// Close releases the store. Methods called afterwards return
	// [ErrClosed].
	Close() error
}

// ValueLimiter is a store that limits the length of a value beside its
// byte bounds: [NATS] takes no value longer than its server's max_payload
// allows. An enqueue of a longer value is refused with a [*BoundError]
// wrapping [ErrPayloadLimit]. The limit may change while the store runs.
type ValueLimiter interface {
	// MaxValue returns the length of the largest value the store takes
	// now. It does no I/O, so it can be asked for every request.
	MaxValue() int64
}

var _ ValueLimiter = (*NATS)(nil)

// Key returns the storage key of sequence number seq in route's queue.
func Key(route string, seq uint64) string {
	var b strings.Builder
	b.Grow(len(route) + 1 + seqDigits)
	b.WriteString(route)
	b.WriteByte(0)
	var digits [seqDigits]byte
	for i := seqDigits - 1; i >= 0; i-- {
		digits[i] = byte('0' + seq%10)
		seq /= 10
	}
	b.Write(digits[:])
	return b.String()
}

// RoutePrefix returns the prefix every key of route's queue starts with.
func RoutePrefix(route string) string { return route + "\x00" }

// HasRoute reports whether key belongs to route's queue: it must start with
// route followed by a NUL. A route that merely starts with route (such as
// "K#s2" for "K#s") does not match.
func HasRoute(key, route string) bool {
	return strings.HasPrefix(key, RoutePrefix(route))
}

// seqDigits is the number of decimal digits of the sequence in a key.
const seqDigits = 20

// splitKey parses a key made by [Key]. The route is everything before the
// last NUL, so a route that itself held a NUL would still parse whole.
func splitKey(key string) (route string, seq uint64, ok bool) {
	i := strings.LastIndexByte(key, 0)
	if i < 0 || len(key)-i-1 != seqDigits {
		return "", 0, false
	}
	seq, err := strconv.ParseUint(key[i+1:], 10, 64)
	if err != nil {
		return "", 0, false
	}
	return key[:i], seq, true
}
