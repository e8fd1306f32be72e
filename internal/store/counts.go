package store

// routeCounts caches how many entries each route has in the messages bucket,
// so that enqueue can enforce the cap without walking the queue and
// [Bolt.Depth] need not count one.
//
// Only the writer goroutine of a [Bolt] changes the counts, and it runs one
// write transaction at a time: changes made inside a transaction go to
// delta, which apply merges into committed once the transaction has
// committed and discard throws away when it rolled back. committed is
// written only under the Bolt's mu (held for writing) and read by others
// under it (held for reading); the writer, being the only writer, reads it
// without the lock.
type routeCounts struct {
	committed map[string]int // counts as of the last commit applied; no zero entries
	delta     map[string]int // changes made by the writer's current transaction
}

func newRouteCounts(committed map[string]int) *routeCounts {
	return &routeCounts{committed: committed, delta: make(map[string]int)}
}

// inTx returns route's count as seen by the writer's current transaction.
func (c *routeCounts) inTx(route string) int {
	return c.committed[route] + c.delta[route]
}

// add records a change of route's count in the writer's current
// transaction.
func (c *routeCounts) add(route string, d int) {
	if d != 0 {
		c.delta[route] += d
	}
}

// apply merges the changes of a committed transaction. The caller holds the
// Bolt's mu for writing.
func (c *routeCounts) apply() {
	for route, d := range c.delta {
		if n := c.committed[route] + d; n > 0 {
			c.committed[route] = n
		} else {
			delete(c.committed, route)
		}
	}
	clear(c.delta)
}

// discard throws away the changes of a transaction that rolled back.
func (c *routeCounts) discard() { clear(c.delta) }

// depth returns route's committed count. The caller holds the Bolt's mu.
func (c *routeCounts) depth(route string) int { return c.committed[route] }
