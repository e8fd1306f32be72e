// Package store defines the bus's message queues: one FIFO queue per route,
// bounded, with the oldest entry dropped when a queue is full. It holds
// what every implementation shares (the [Store] interface, [Entry], keys,
// errors and byte bounds), the optional abilities a caller may ask a store
// for, and [Memory], the implementation that keeps queues in process
// memory.
//
// # Implementations
//
// There are three implementations of [Store]: [Memory], which loses
// everything when the process ends; package store/bolt, a bbolt file that
// survives restarts; and package store/nats, a NATS JetStream stream that
// several processes can share and that a JetStream cluster replicates.
// The bus uses any of them through the interface, and package
// store/storetest holds the conformance tests that every one of them runs.
//
// # Optional abilities
//
// Stores may offer more through small interfaces, which a caller checks
// for with a type assertion on the [Store] it holds, never on a concrete
// type: [Totaler] counts what all queues hold; [Watcher] tells of messages
// that other processes stored in a shared store, [Health] whether a store
// that lives behind a connection can serve now, [ValueLimiter] how long a
// value may be when something other than the byte bounds limits it, and
// [Failer] when a store found, while it ran, that it can serve no more.
//
// # Bounds
//
// A queue holds at most [Options.Cap] entries and [Options.RouteBytes]
// bytes, and all queues together at most [Options.TotalBytes] bytes, each
// entry counted by [EntrySize]. An enqueue that would take a queue past
// its own bounds drops that queue's oldest entries, as the original bus
// did for its count; one that would take the store past its total is
// refused with an error wrapping [ErrFull], and nothing changes. The
// JetStream store has no per-route byte bound; see its package.
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
	return int64(2*len(route)+1+SeqDigits+valueLen) + EntryOverhead
}

// Errors returned by every store. Callers compare them with [errors.Is];
// each implementation adds its own for what only it can meet.
var (
	// ErrClosed is returned by every method after [Store.Close].
	ErrClosed error = &Error{Reason: "closed"}

	// ErrFull is wrapped by the [*BoundError] of an enqueue refused
	// because the store would hold more than [Options.TotalBytes]. Nothing
	// was stored or dropped; the same enqueue can succeed once entries
	// have been deleted.
	ErrFull error = &Error{Reason: "queues full"}
	// ErrTooLarge is wrapped by the [*BoundError] of an enqueue refused
	// because the entry alone is larger than [Options.RouteBytes], so no
	// queue can ever take it.
	ErrTooLarge error = &Error{Reason: "entry larger than a queue may hold"}
	// ErrPayloadLimit is wrapped by the [*BoundError] of an enqueue of a
	// value longer than a [ValueLimiter] takes, such as one above what a
	// NATS server's max_payload leaves.
	ErrPayloadLimit error = &Error{Reason: "value above the NATS server's max_payload"}
)

// Error is an error of a store that a caller may put after words of its
// own. Its text is "store: " and Reason, as the stores' errors read; a
// caller that says itself what failed, as a command line's "cannot open
// the queues in NATS: ..." does, prints Reason, and learns what the
// failure is from Err with [errors.Is] and [errors.As].
type Error struct {
	// Reason says what went wrong and, where it can, what to do.
	Reason string
	// Err is what the failure is: a sentinel such as ErrClosed, a typed
	// error, or the error the store met; nil when there is nothing more.
	Err error
}

func (e *Error) Error() string { return "store: " + e.Reason }

// Errorf returns a [*Error] whose Reason is format applied to args and
// whose Err is err.
func Errorf(err error, format string, args ...any) *Error {
	return &Error{Reason: fmt.Sprintf(format, args...), Err: err}
}

// Reason returns what err says after the "store: " a store's errors start
// with: the Reason of a [*Error], and the whole text of any other error.
// It looks at err itself, not at what err wraps, so the words a caller
// put around a store's error are kept.
func Reason(err error) string {
	if e, ok := err.(*Error); ok {
		return e.Reason
	}
	return err.Error()
}

// Unwrap returns Err.
func (e *Error) Unwrap() error { return e.Err }

// BoundError reports an enqueue refused by a byte bound. It wraps
// [ErrFull], [ErrTooLarge] or [ErrPayloadLimit].
type BoundError struct {
	// Err is ErrFull, ErrTooLarge or ErrPayloadLimit.
	Err error
	// Bound is the bound that refused it, in bytes: [Options.TotalBytes]
	// for ErrFull, [Options.RouteBytes] for ErrTooLarge, the largest
	// value the store takes ([ValueLimiter.MaxValue]) for ErrPayloadLimit.
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

// Options holds the settings every store takes; each implementation's own
// options embed it. A nil *Options, like its zero value, means defaults.
type Options struct {
	// Cap is the most entries one route's queue holds. Zero or less means
	// [DefaultCap]. Callers that accept a configured 0 clamp it to 1
	// themselves.
	Cap int
	// RouteBytes is the most bytes one route's queue holds, as
	// [EntrySize] counts them; an enqueue drops the route's oldest entries
	// until it fits, and refuses an entry larger than this with
	// [ErrTooLarge]. Zero or less means [DefaultRouteBytes]; above
	// TotalBytes it is TotalBytes. The JetStream store applies only the
	// second part.
	RouteBytes int64
	// TotalBytes is the most bytes all queues hold together; an enqueue
	// that would go past it is refused with [ErrFull]. Zero or less means
	// [DefaultTotalBytes]. For the JetStream store it is the stream's
	// max_bytes, which the server counts in its own way.
	TotalBytes int64
	// Now returns the current time; nil means [time.Now]. [Memory] uses it
	// once, to seed its sequence, and the JetStream store to set the first
	// sequence of a stream it creates.
	Now func() time.Time
	// Logger receives the store's few log events; nil discards them. The
	// stores do not log dropped entries: [Store.Enqueue] returns the count
	// and the caller decides how to report it.
	Logger *slog.Logger
}

// WithDefaults returns a copy of o with every default applied: Cap,
// RouteBytes and TotalBytes as [Options.Bounds] gives them, Now and
// Logger set. A store reads its settings from it.
func (o *Options) WithDefaults() Options {
	var d Options
	if o != nil {
		d = *o
	}
	if d.Cap <= 0 {
		d.Cap = DefaultCap
	}
	d.RouteBytes, d.TotalBytes = o.Bounds()
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	return d
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
	// it (on disk, for the bbolt store). When the store would then hold more than its
	// total byte bound, it changes nothing and returns a [*BoundError]
	// wrapping [ErrFull]; see [Options] for the bounds.
	Enqueue(route string, value []byte) (key string, dropped int, err error)
	// Peek returns the oldest entry of route's queue without removing it,
	// and false when the queue is empty.
	Peek(route string) (Entry, bool, error)
	// Delete removes the entry with exactly this key: once it returns,
	// Peek and Depth no longer see it. Deleting a key that is not there is
	// not an error. A store may commit the deletion to disk after it
	// returns, as the bbolt store does; see its documentation.
	Delete(key string) error
	// Depth returns the number of entries in route's queue.
	Depth(route string) (int, error)
	// Close releases the store. Methods called afterwards return
	// [ErrClosed].
	Close() error
}

// Key returns the storage key of sequence number seq in route's queue.
func Key(route string, seq uint64) string {
	var b strings.Builder
	b.Grow(len(route) + 1 + SeqDigits)
	b.WriteString(route)
	b.WriteByte(0)
	var digits [SeqDigits]byte
	for i := SeqDigits - 1; i >= 0; i-- {
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

// SeqDigits is the number of decimal digits of the sequence in a key.
const SeqDigits = 20

// ParseKey parses a key made by [Key]. The route is everything before the
// last NUL, so a route that itself held a NUL would still parse whole.
func ParseKey(key string) (route string, seq uint64, ok bool) {
	i := strings.LastIndexByte(key, 0)
	if i < 0 || len(key)-i-1 != SeqDigits {
		return "", 0, false
	}
	seq, err := strconv.ParseUint(key[i+1:], 10, 64)
	if err != nil {
		return "", 0, false
	}
	return key[:i], seq, true
}
