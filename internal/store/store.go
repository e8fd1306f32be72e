// Package store keeps the bus's message queues: one FIFO queue per route,
// bounded, with the oldest entry dropped when a queue is full.
//
// There are two implementations of [Store]: [Memory], which loses everything
// when the process ends, and [Bolt], a bbolt file that survives restarts. The
// bus uses either through the interface, and the same conformance tests run
// against both.
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
	"strings"
)

// DefaultCap is the default number of entries a queue holds.
const DefaultCap = 1024

// ErrClosed is returned by every method after [Store.Close].
var ErrClosed = errors.New("store: closed")

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
	// oldest entries of that queue until it holds at most the store's cap,
	// as one atomic step. It returns the new entry's key and how many
	// entries were dropped. When it returns without error the entry is as
	// durable as the implementation makes it (on disk, for Bolt).
	Enqueue(route string, value []byte) (key string, dropped int, err error)
	// Peek returns the oldest entry of route's queue without removing it,
	// and false when the queue is empty.
	Peek(route string) (Entry, bool, error)
	// Delete removes the entry with exactly this key. Deleting a key that
	// is not there is not an error.
	Delete(key string) error
	// Depth returns the number of entries in route's queue.
	Depth(route string) (int, error)
	// Close releases the store. Methods called afterwards return
	// [ErrClosed].
	Close() error
}

// Key returns the storage key of sequence number seq in route's queue.
func Key(route string, seq uint64) string {
	return fmt.Sprintf("%s\x00%020d", route, seq)
}

// RoutePrefix returns the prefix every key of route's queue starts with.
func RoutePrefix(route string) string { return route + "\x00" }

// HasRoute reports whether key belongs to route's queue: it must start with
// route followed by a NUL. A route that merely starts with route (such as
// "K#s2" for "K#s") does not match.
func HasRoute(key, route string) bool {
	return strings.HasPrefix(key, RoutePrefix(route))
}
