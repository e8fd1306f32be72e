package store

import (
	"sync"

	bolt "go.etcd.io/bbolt"
)

// routeCounts caches how many entries each route has in the messages bucket,
// so that enqueue can enforce the cap without walking the queue.
//
// The cache must agree with the data both inside a write transaction (the cap
// decision reads it) and outside one (Depth reads it), while write
// transactions may roll back: [bolt.DB.Batch] rolls back a whole batch when
// one of its functions fails and re-runs the others in a new transaction.
// So changes made inside a write transaction go to delta, tagged with that
// transaction, and reach committed only once the transaction is known to
// have committed:
//
//   - by the OnCommit hook, which runs after bbolt releases its writer lock,
//     so the next write transaction may start before it, or
//   - by the next write transaction, in begin. bbolt runs one write
//     transaction at a time and each commit raises the transaction ID by
//     one, so if the next transaction's ID is higher, the tagged one
//     committed; if it is the same, the tagged one rolled back and delta is
//     thrown away.
//
// This works only if every write transaction on the database calls begin
// first, including ones that change no count.
type routeCounts struct {
	mu        sync.Mutex
	committed map[string]int // guarded by mu; counts as of the last commit applied; no zero entries
	tx        *bolt.Tx       // guarded by mu; the write transaction delta belongs to, or nil
	txid      int            // guarded by mu; tx.ID()
	delta     map[string]int // guarded by mu; changes made by tx
}

func newRouteCounts(committed map[string]int) *routeCounts {
	return &routeCounts{committed: committed, delta: make(map[string]int)}
}

// begin prepares the counts for use inside the write transaction tx. It is
// cheap to call again for the same transaction, as each function of a batch
// does.
func (c *routeCounts) begin(tx *bolt.Tx) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.tx == tx {
		return
	}
	if c.tx != nil && c.txid < tx.ID() {
		c.applyLocked()
	}
	clear(c.delta)
	c.tx, c.txid = tx, tx.ID()
	tx.OnCommit(func() { c.commit(tx) })
}

// commit applies the changes of tx unless they were applied already.
func (c *routeCounts) commit(tx *bolt.Tx) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.tx == tx {
		c.applyLocked()
	}
}

func (c *routeCounts) applyLocked() {
	for route, d := range c.delta {
		if n := c.committed[route] + d; n > 0 {
			c.committed[route] = n
		} else {
			delete(c.committed, route)
		}
	}
	clear(c.delta)
	c.tx = nil
}

// inTx returns route's count as seen by the current write transaction.
// The caller must have called begin for it.
func (c *routeCounts) inTx(route string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.committed[route] + c.delta[route]
}

// add records a change of route's count in the current write transaction.
func (c *routeCounts) add(route string, d int) {
	if d == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.delta[route] += d
}

// depth returns route's committed count.
func (c *routeCounts) depth(route string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.committed[route]
}
