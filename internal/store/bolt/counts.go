package bolt

// routeSize is what one route holds in the messages bucket: its entries,
// and their sizes as [store.EntrySize] counts them.
type routeSize struct {
	n     int
	bytes int64
}

// routeCounts caches how many entries, and how many bytes, each route has in
// the messages bucket, and the bytes of all routes together, so that enqueue
// can enforce the bounds without walking the queue and [Store.Depth] need
// not count one.
//
// Only the writer goroutine of a [Store] changes the counts, and it runs one
// write transaction at a time: changes made inside a transaction go to
// delta and deltaBytes, which apply merges into committed and total once
// the transaction has committed and discard throws away when it rolled
// back. committed and total are written only under the Bolt's mu (held for
// writing) and read by others under it (held for reading); the writer,
// being the only writer, reads them without the lock.
type routeCounts struct {
	committed  map[string]routeSize // as of the last commit applied; no zero entries
	total      int64                // the bytes of committed, summed
	delta      map[string]routeSize // changes made by the writer's current transaction
	deltaBytes int64                // the bytes of delta, summed
}

func newRouteCounts(committed map[string]routeSize) *routeCounts {
	var total int64
	for _, rs := range committed {
		total += rs.bytes
	}
	return &routeCounts{committed: committed, total: total, delta: make(map[string]routeSize)}
}

// inTx returns what route holds as seen by the writer's current
// transaction.
func (c *routeCounts) inTx(route string) routeSize {
	rs, d := c.committed[route], c.delta[route]
	return routeSize{rs.n + d.n, rs.bytes + d.bytes}
}

// totalInTx returns the bytes of all routes as seen by the writer's current
// transaction.
func (c *routeCounts) totalInTx() int64 { return c.total + c.deltaBytes }

// add records a change of route's entries and bytes in the writer's
// current transaction.
func (c *routeCounts) add(route string, n int, bytes int64) {
	if n == 0 && bytes == 0 {
		return
	}
	d := c.delta[route]
	c.delta[route] = routeSize{d.n + n, d.bytes + bytes}
	c.deltaBytes += bytes
}

// apply merges the changes of a committed transaction. The caller holds the
// Bolt's mu for writing.
func (c *routeCounts) apply() {
	for route, d := range c.delta {
		rs := c.committed[route]
		if rs = (routeSize{rs.n + d.n, rs.bytes + d.bytes}); rs.n > 0 {
			c.committed[route] = rs
		} else {
			delete(c.committed, route)
		}
	}
	c.total += c.deltaBytes
	c.discard()
}

// discard throws away the changes of a transaction that rolled back.
func (c *routeCounts) discard() {
	clear(c.delta)
	c.deltaBytes = 0
}

// depth returns route's committed count. The caller holds the Bolt's mu.
func (c *routeCounts) depth(route string) int { return c.committed[route].n }

// bytes returns the committed bytes of all routes. The caller holds the
// Bolt's mu.
func (c *routeCounts) bytes() int64 { return c.total }
