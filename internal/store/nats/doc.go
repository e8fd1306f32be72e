// Package nats is the [store.Store] kept in one NATS JetStream stream, so
// that several processes can serve the same queues and a JetStream
// cluster can keep copies of them on several machines. [Store] says how
// it maps queues to subjects, what Enqueue promises and how it counts
// bytes.
//
// Beside the interface, a [Store] offers every optional ability of
// package store but [store.Failer]: [store.Totaler] from the stream's
// state, [store.Watcher] with a consumer on the stream's subjects (see
// watch.go), [store.Health] from the state of the connection, and
// [store.ValueLimiter] from the server's max_payload. The bus's shared
// roster, which keeps its records in a key-value bucket of the same
// server, lives in package rosterlog; it reaches the connection through
// [Store.Conn].
package nats

import "github.com/interlink-go/interlink/internal/store"

// Errors returned by [Open] and by a [Store], beside those of package
// store. Callers compare them with [errors.Is].
var (
	// ErrUnreachable is returned by [Open] when no NATS server answers
	// at the URL, and by the methods of [Store] while the connection is
	// down (it comes back on its own when a server is reachable again).
	ErrUnreachable error = &store.Error{Reason: reasonUnreachable}
	// ErrNoJetStream is returned by [Open] when the server, or the
	// account the connection uses, has JetStream disabled.
	ErrNoJetStream error = &store.Error{Reason: reasonNoJetStream}
	// ErrStreamConfig is returned by [Open] when the stream exists with
	// settings the store cannot work with, or cannot be created because
	// its subjects overlap another stream's. A [*StreamConfigError]
	// carries the differing settings.
	ErrStreamConfig error = &store.Error{Reason: "stream settings do not fit"}
)

// The reasons of the sentinels that errors with more to say start with.
const (
	reasonUnreachable = "NATS server unreachable"
	reasonNoJetStream = "JetStream not enabled"
	reasonPayload     = "value above the NATS server's max_payload"
)
