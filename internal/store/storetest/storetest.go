// Package storetest holds the conformance tests that every implementation
// of [store.Store] runs, and the helpers they are written with. An
// implementation's tests call [Run] with a [Backend] that opens new, empty
// stores of its kind, and add tests of their own for what only it does, as
// the drivers of Go CDK's drivertest packages do.
//
// The tests follow groups B and D of the bus specification's test list at
// the store level: FIFO order per route, isolated routes, drops at the cap,
// keys, deletes, closing, and the byte bounds.
package storetest

import (
	"bytes"
	"errors"
	"strconv"
	"testing"

	"github.com/interlink-go/interlink/internal/store"
)

// Backend describes an implementation to the suite. The zero value of each
// field but Open asks the most of a store: [store.Memory] sets none.
type Backend struct {
	// Open returns a new, empty store with opts (nil means defaults). It
	// closes the store when tb's test ends, and may check the store's
	// invariants first.
	Open func(tb testing.TB, opts *store.Options) store.Store
	// Remote is set for a store whose every call is a request to a
	// server: the suite sends fewer messages where it sends thousands.
	Remote bool
	// Slow is set for a store whose every write costs a commit on disk
	// or a request: the suite drains a sample of the routes it filled.
	Slow bool
	// OwnByteCount is set for a store that counts what its entries take
	// against [store.Options.TotalBytes] in its own way rather than by
	// [store.EntrySize], such as a JetStream stream.
	OwnByteCount bool
	// NoRouteBytes is set for a store that bounds a route's bytes only by
	// refusing a single entry larger than [store.Options.RouteBytes],
	// without dropping older entries to make room.
	NoRouteBytes bool

	// For the benchmarks (bench.go):

	// Commits, if set, returns how many write commits s has made, for a
	// benchmark's commits/op.
	Commits func(tb testing.TB, s store.Store) int
	// Fill, if set, puts n entries of value on route more quickly than n
	// enqueues, for the benchmarks that start from a full queue.
	Fill func(tb testing.TB, s store.Store, route string, n int, value []byte)
}

// Run runs every conformance test against b, each as a parallel subtest
// of t named after what it proves.
func Run(t *testing.T, b Backend) {
	t.Helper()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.run(t, b)
		})
	}
}

// tests lists the conformance tests, in the order Run runs them.
var tests = []struct {
	name string
	run  func(*testing.T, Backend)
}{
	{"FIFOAcrossDeletes", testFIFOAcrossDeletes},
	{"PeekDoesNotRemove", testPeekDoesNotRemove},
	{"DeleteThenPeek", testDeleteThenPeek},
	{"DeleteFromMiddle", testDeleteFromMiddle},
	{"DeleteAbsent", testDeleteAbsent},
	{"KeysOfOneRouteOnly", testKeysOfOneRouteOnly},
	{"RoutesIsolated", testRoutesIsolated},
	{"BareKeyAndSessionSeparate", testBareKeyAndSessionSeparate},
	{"ManyRoutes", testManyRoutes},
	{"OverflowDropOldest", testOverflowDropOldest},
	{"ConcurrentEnqueue", testConcurrentEnqueue},
	{"ValuesCopied", testValuesCopied},
	{"EmptyValue", testEmptyValue},
	{"LargeValue", testLargeValue},
	{"Closed", testClosed},
	{"DeleteWithAnotherRoutesSequence", testDeleteWithAnotherRoutesSequence},
	{"TotalsCountRoutesAndEntries", testTotalsCountRoutesAndEntries},
	{"TotalBytesRefuseAndKeepWhatWasStored", testTotalBytesRefuseAndKeepWhatWasStored},
	{"RouteBytesDropOldest", testRouteBytesDropOldest},
	{"CapDropMakesRoomInTheTotal", testCapDropMakesRoomInTheTotal},
	{"EntryOverRouteBytesIsTooLarge", testEntryOverRouteBytesIsTooLarge},
	{"SendsRacingDeletesFreeTheirBytes", testSendsRacingDeletesFreeTheirBytes},
}

// Enqueue stores value on route, failing the test on an error or on a key
// of another route, and returns the key and the count dropped.
func Enqueue(tb testing.TB, s store.Store, route, value string) (key string, dropped int) {
	tb.Helper()
	key, dropped, err := s.Enqueue(route, []byte(value))
	if err != nil {
		tb.Fatalf("Enqueue(%q): %v", route, err)
	}
	if !store.HasRoute(key, route) {
		tb.Fatalf("Enqueue(%q) returned key %q of another route", route, key)
	}
	return key, dropped
}

// Peek returns route's oldest entry, failing the test on an error.
func Peek(tb testing.TB, s store.Store, route string) (store.Entry, bool) {
	tb.Helper()
	e, ok, err := s.Peek(route)
	if err != nil {
		tb.Fatalf("Peek(%q): %v", route, err)
	}
	return e, ok
}

// Delete deletes key, failing the test on an error.
func Delete(tb testing.TB, s store.Store, key string) {
	tb.Helper()
	if err := s.Delete(key); err != nil {
		tb.Fatalf("Delete(%q): %v", key, err)
	}
}

// Depth returns route's depth, failing the test on an error.
func Depth(tb testing.TB, s store.Store, route string) int {
	tb.Helper()
	n, err := s.Depth(route)
	if err != nil {
		tb.Fatalf("Depth(%q): %v", route, err)
	}
	return n
}

// WantHead fails unless route's oldest entry has this value (and key, when
// key is not empty).
func WantHead(tb testing.TB, s store.Store, route, key, value string) {
	tb.Helper()
	e, ok := Peek(tb, s, route)
	switch {
	case !ok:
		tb.Fatalf("Peek(%q): empty, want %q", route, value)
	case string(e.Value) != value:
		tb.Fatalf("Peek(%q) = %q, want %q", route, e.Value, value)
	case key != "" && e.Key != key:
		tb.Fatalf("Peek(%q) key = %q, want %q", route, e.Key, key)
	}
}

// WantEmpty fails unless route has no entry.
func WantEmpty(tb testing.TB, s store.Store, route string) {
	tb.Helper()
	if e, ok := Peek(tb, s, route); ok {
		tb.Fatalf("Peek(%q) = %q, want empty", route, e.Value)
	}
	if n := Depth(tb, s, route); n != 0 {
		tb.Fatalf("Depth(%q) = %d, want 0", route, n)
	}
}

// Drain peeks and deletes until route is empty and returns the keys and
// values it took.
func Drain(tb testing.TB, s store.Store, route string) (keys, values []string) {
	tb.Helper()
	for {
		e, ok := Peek(tb, s, route)
		if !ok {
			return keys, values
		}
		keys, values = append(keys, e.Key), append(values, string(e.Value))
		Delete(tb, s, e.Key)
	}
}

// SeqOf returns the sequence of key, failing the test if it is malformed.
func SeqOf(tb testing.TB, key string) uint64 {
	tb.Helper()
	_, seq, ok := store.ParseKey(key)
	if !ok {
		tb.Fatalf("malformed key %q", key)
	}
	return seq
}

// The byte-bound tests store values of ValueLen bytes on routes of three
// bytes, so an entry counts [EntrySize] bytes in a store that counts by
// [store.EntrySize]; JetStream counts a little less (subject, headers, its
// own record), so the tests that run there too find the refusal by sending
// until it comes.
const ValueLen = 1000

// EntrySize is what an entry of [Value] counts on a route of three bytes.
var EntrySize = store.EntrySize("K#0", ValueLen)

// Value returns a value of ValueLen bytes that starts with tag.
func Value(tag string) []byte {
	v := bytes.Repeat([]byte{'.'}, ValueLen)
	copy(v, tag)
	return v
}

// WantBound fails unless err is a *store.BoundError wrapping want with the
// given bound, and returns it.
func WantBound(tb testing.TB, err, want error, bound int64) *store.BoundError {
	tb.Helper()
	be, ok := errors.AsType[*store.BoundError](err)
	if !ok || !errors.Is(err, want) || be.Bound != bound {
		tb.Fatalf("error %v, want a *BoundError wrapping %v with bound %d", err, want, bound)
	}
	return be
}

// Totals returns what s holds, and false when s is not a [store.Totaler].
func Totals(tb testing.TB, s store.Store) (store.Totals, bool) {
	tb.Helper()
	tot, ok := s.(store.Totaler)
	if !ok {
		return store.Totals{}, false
	}
	t, err := tot.Totals()
	if err != nil {
		tb.Fatalf("Totals: %v", err)
	}
	return t, true
}

// FillRoutes enqueues one [Value] on each of routes K#0, K#1, ... until the
// store refuses with ErrFull under the total bound, and returns the keys
// it stored. The refused route stays empty.
func FillRoutes(tb testing.TB, s store.Store, total int64) []string {
	tb.Helper()
	var keys []string
	for i := 0; ; i++ {
		if i > 100 {
			tb.Fatalf("%d entries stored under a total of %d bytes, and no refusal", i, total)
		}
		route := "K#" + strconv.Itoa(i)
		key, dropped, err := s.Enqueue(route, Value(route))
		if err != nil {
			be := WantBound(tb, err, store.ErrFull, total)
			if be.Size <= 0 {
				tb.Fatalf("refusal reports an entry of %d bytes", be.Size)
			}
			WantEmpty(tb, s, route)
			return keys
		}
		if dropped != 0 {
			tb.Fatalf("Enqueue(%q) dropped %d from a route of its own", route, dropped)
		}
		keys = append(keys, key)
	}
}

func itoa(i int) string { return strconv.Itoa(i) }
