package store

// The optional abilities of a store. A caller holding a [Store] checks
// for one with a type assertion on the interface.

// Totals is what all queues of a store hold together.
type Totals struct {
	// Routes is the number of routes with at least one entry, and
	// Entries the entries they hold.
	Routes, Entries int
	// Bytes is what the entries count for against [Options.TotalBytes]:
	// [EntrySize] of each for [Memory] and the bbolt store, the stream's
	// own count for the JetStream store.
	Bytes int64
}

// Totaler is implemented by the stores that can tell, without reading every
// queue, what all queues hold together. The bus reports it in its metrics
// and on its status page.
type Totaler interface {
	Totals() (Totals, error)
}

// ValueLimiter is a store that limits the length of a value beside its
// byte bounds: the JetStream store takes no value longer than its
// server's max_payload allows. An enqueue of a longer value is refused with a [*BoundError]
// wrapping [ErrPayloadLimit]. The limit may change while the store runs.
type ValueLimiter interface {
	// MaxValue returns the length of the largest value the store takes
	// now. It does no I/O, so it can be asked for every request.
	MaxValue() int64
}

// Watcher is implemented by the stores that other processes can write to,
// so that a process can learn of messages it did not store itself. The bus
// uses it to wake the long-polls parked on a route when another bus stored
// a message for it.
//
// What a watcher reports is a hint, never a promise: a call may come late,
// twice, or for a message already gone. A caller must look at the queue
// again after a hint, and must not rely on hints alone either; lost says
// when hints may have been missed.
type Watcher interface {
	// Watch calls stored with the route of each message that another
	// process stores from now on, after the store holds it, and lost when
	// such calls may have been missed, such as after the connection to a
	// shared store came back: every route may then have new messages.
	// Messages that this store's own Enqueue stored need no hint, since
	// its caller knows of them; they may be hinted or not.
	// Calls come from the store's own goroutines, one at a time, and must
	// return quickly. They end when stop has returned or the store is
	// closed; stop may be called more than once.
	Watch(stored func(route string), lost func()) (stop func())
}

// Health is implemented by the stores that can fail while the process
// runs and recover by themselves, such as one behind a network connection.
type Health interface {
	// Healthy returns nil when the store can serve requests now, and
	// otherwise why not. It does no I/O, so it can be asked often.
	Healthy() error
}

// Failer is implemented by the stores that can find, while they run, that
// they can serve no more and will not recover by themselves, such as a
// database file found damaged. The process should then stop: the store
// needs its operator.
type Failer interface {
	// Failed returns a channel that is closed when the store has failed.
	Failed() <-chan struct{}
	// Err returns why the store failed once Failed is closed, and nil
	// before.
	Err() error
}

var (
	_ Store   = (*Memory)(nil)
	_ Totaler = (*Memory)(nil)
)
