package bolt

import "github.com/interlink-go/interlink/internal/store"

// ackSet is the acknowledged entries whose delete is not committed yet:
// [Store.Delete] adds them, and the writer forgets them once a commit has
// deleted them. Its owner, the [Store], guards it with its mu: readers hold
// it for reading, the methods that change the set for writing.
type ackSet struct {
	sizes    map[string]int64 // key → its store.EntrySize; keys that are stored
	perRoute map[string]int   // the number of keys per route; no zero entries
	bytes    int64            // the sizes, summed
}

func (a *ackSet) init() {
	a.sizes = make(map[string]int64)
	a.perRoute = make(map[string]int)
}

// has reports whether key is acknowledged.
func (a *ackSet) has(key string) bool {
	_, ok := a.sizes[key]
	return ok
}

// add records key, of route, with its size.
func (a *ackSet) add(key, route string, size int64) {
	a.sizes[key] = size
	a.perRoute[route]++
	a.bytes += size
}

// forget removes key and reports whether it was acknowledged.
func (a *ackSet) forget(key string) bool {
	size, ok := a.sizes[key]
	if !ok {
		return false
	}
	delete(a.sizes, key)
	a.bytes -= size
	route, _, _ := store.ParseKey(key)
	if n := a.perRoute[route] - 1; n > 0 {
		a.perRoute[route] = n
	} else {
		delete(a.perRoute, route)
	}
	return true
}

// len returns the number of acknowledged keys.
func (a *ackSet) len() int { return len(a.sizes) }

// in returns the number of acknowledged keys of route.
func (a *ackSet) in(route string) int { return a.perRoute[route] }

// keys returns the acknowledged keys, in no order.
func (a *ackSet) keys() []string {
	keys := make([]string, 0, len(a.sizes))
	for k := range a.sizes {
		keys = append(keys, k)
	}
	return keys
}
