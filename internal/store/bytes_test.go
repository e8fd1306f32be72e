package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The byte bounds, for every store. Values are 1,000 bytes on routes of
// three bytes, so an entry counts entrySize bytes in memory and in bbolt;
// JetStream counts a little less (subject, headers, its own record), so
// tests that run there too find the refusal by sending until it comes.

const valueLen = 1000

var entrySize = EntrySize("K#0", valueLen)

// value returns a value of valueLen bytes that starts with tag.
func value(tag string) []byte {
	v := bytes.Repeat([]byte{'.'}, valueLen)
	copy(v, tag)
	return v
}

// wantBound fails unless err is a *BoundError wrapping want with the given
// bound.
func wantBound(tb testing.TB, err, want error, bound int64) *BoundError {
	tb.Helper()
	be, ok := errors.AsType[*BoundError](err)
	if !ok || !errors.Is(err, want) || be.Bound != bound {
		tb.Fatalf("error %v, want a *BoundError wrapping %v with bound %d", err, want, bound)
	}
	return be
}

func totals(tb testing.TB, s Store) Totals {
	tb.Helper()
	t, err := s.(Totaler).Totals()
	if err != nil {
		tb.Fatalf("Totals: %v", err)
	}
	return t
}

// fillRoutes enqueues one value on each of routes K#0, K#1, ... until the
// store refuses with ErrFull, and returns the keys it stored. The refused
// route stays empty.
func fillRoutes(tb testing.TB, s Store, total int64) []string {
	tb.Helper()
	var keys []string
	for i := 0; ; i++ {
		if i > 100 {
			tb.Fatalf("%d entries stored under a total of %d bytes, and no refusal", i, total)
		}
		route := "K#" + strconv.Itoa(i)
		key, dropped, err := s.Enqueue(route, value(route))
		if err != nil {
			be := wantBound(tb, err, ErrFull, total)
			if be.Size <= 0 {
				tb.Fatalf("refusal reports an entry of %d bytes", be.Size)
			}
			wantEmpty(tb, s, route)
			return keys
		}
		if dropped != 0 {
			tb.Fatalf("Enqueue(%q) dropped %d from a route of its own", route, dropped)
		}
		keys = append(keys, key)
	}
}

// Many routes, each far under its own bound, together reach the total: the
// store refuses the next entry, whatever its route, and keeps every entry
// it had accepted; a delete makes room again.
func TestTotalBytesRefuseAndKeepWhatWasStored(t *testing.T) {
	forEachStore(t, func(t *testing.T, open func(*Options) Store) {
		const total = 10_000
		s := open(&Options{RouteBytes: 4_000, TotalBytes: total})
		keys := fillRoutes(t, s, total)
		if _, ok := s.(*NATS); !ok && len(keys) != int(total/entrySize) {
			t.Fatalf("stored %d entries of %d bytes under a total of %d", len(keys), entrySize, total)
		}
		if len(keys) < 2 {
			t.Fatalf("stored %d entries", len(keys))
		}
		if got := totals(t, s); got.Entries != len(keys) || got.Bytes > total {
			t.Fatalf("Totals = %+v after %d entries, bound %d", got, len(keys), total)
		}
		// A route that has entries is refused too: its own bound is far.
		_, _, err := s.Enqueue("K#0", value("K#0 again"))
		wantBound(t, err, ErrFull, total)
		if n := depth(t, s, "K#0"); n != 1 {
			t.Fatalf("Depth(K#0) = %d after a refused enqueue, want 1", n)
		}
		for i, key := range keys {
			route := "K#" + strconv.Itoa(i)
			wantHead(t, s, route, key, string(value(route)))
		}

		// Route names of the same length make entries of the same size
		// in every store.
		del(t, s, keys[0])
		enqueue(t, s, "K#n", string(value("K#n")))
		_, _, err = s.Enqueue("K#m", value("K#m"))
		wantBound(t, err, ErrFull, total)
	})
}

// One route filled with large values keeps at most its byte bound,
// dropping its oldest entries, as the cap does; a larger value drops as
// many as it needs. JetStream has no per-subject byte limit.
func TestRouteBytesDropOldest(t *testing.T) {
	forEachStore(t, func(t *testing.T, open func(*Options) Store) {
		routeBytes := 3*entrySize + entrySize/2
		s := open(&Options{RouteBytes: routeBytes, TotalBytes: 1 << 20})
		if _, ok := s.(*NATS); ok {
			t.Skip("JetStream has no byte limit per subject")
		}
		for i := range 7 {
			_, dropped := enqueue(t, s, "K#0", string(value(itoa(i))))
			if want := min(1, max(0, i-2)); dropped != want {
				t.Fatalf("send %d dropped %d, want %d", i, dropped, want)
			}
		}
		if n := depth(t, s, "K#0"); n != 3 {
			t.Fatalf("Depth = %d, want 3", n)
		}
		wantHead(t, s, "K#0", "", string(value("4")))
		if got := totals(t, s); got.Bytes != 3*entrySize {
			t.Fatalf("Totals.Bytes = %d, want %d", got.Bytes, 3*entrySize)
		}

		// A value three times as large leaves room for nothing else.
		big := bytes.Repeat([]byte{'B'}, int(routeBytes-EntrySize("K#0", 0)))
		_, dropped := enqueue(t, s, "K#0", string(big))
		if dropped != 3 {
			t.Fatalf("a value of %d bytes dropped %d, want 3", len(big), dropped)
		}
		wantHead(t, s, "K#0", "", string(big))
		if got := totals(t, s); got.Entries != 1 || got.Bytes != routeBytes {
			t.Fatalf("Totals = %+v, want 1 entry of %d bytes", got, routeBytes)
		}
		// Other routes are not touched by K#0's drops.
		enqueue(t, s, "K#1", "other")
		enqueue(t, s, "K#0", "small")
		wantHead(t, s, "K#1", "", "other")
	})
}

// A full route that the cap makes drop its oldest entry takes a new one of
// the same size even when the store is at its total: the drop frees what
// the new entry takes. A route with room under the cap gets no such
// credit, and is refused.
func TestCapDropMakesRoomInTheTotal(t *testing.T) {
	forEachStore(t, func(t *testing.T, open func(*Options) Store) {
		const total = 6_000
		s := open(&Options{Cap: 2, RouteBytes: 1 << 20, TotalBytes: total})
		first, _ := enqueue(t, s, "K#a", string(value("a0")))
		enqueue(t, s, "K#a", string(value("a1")))
		others := fillRoutes(t, s, total)
		if len(others) == 0 {
			t.Fatal("no room for another route")
		}

		_, dropped, err := s.Enqueue("K#a", value("a2"))
		if err != nil || dropped != 1 {
			t.Fatalf("Enqueue to a route at its cap in a full store: dropped %d, %v; want 1, nil", dropped, err)
		}
		wantHead(t, s, "K#a", "", string(value("a1")))
		if err := s.Delete(first); err != nil {
			t.Fatal(err)
		}
		if n := depth(t, s, "K#a"); n != 2 {
			t.Fatalf("Depth(K#a) = %d, want 2", n)
		}
		_, _, err = s.Enqueue("K#0", value("K#0 again"))
		wantBound(t, err, ErrFull, total)
	})
}

// An entry larger than a route may hold is refused for good, on every
// store, and stores nothing.
func TestEntryOverRouteBytesIsTooLarge(t *testing.T) {
	forEachStore(t, func(t *testing.T, open func(*Options) Store) {
		const routeBytes = 3_000
		s := open(&Options{RouteBytes: routeBytes, TotalBytes: 1 << 20})
		fits := bytes.Repeat([]byte{'f'}, int(routeBytes-EntrySize("K#0", 0)))
		enqueue(t, s, "K#0", string(fits))
		_, _, err := s.Enqueue("K#1", append(fits, 'x'))
		be := wantBound(t, err, ErrTooLarge, routeBytes)
		if be.Size != routeBytes+1 {
			t.Fatalf("refusal reports %d bytes, want %d", be.Size, routeBytes+1)
		}
		if errors.Is(err, ErrFull) {
			t.Fatal("a value too large for any route reads as a full store")
		}
		wantEmpty(t, s, "K#1")
	})
}

// RouteBytes above TotalBytes is TotalBytes: one route cannot be promised
// more than the whole store.
func TestBoundsDefaults(t *testing.T) {
	for _, tc := range []struct {
		name               string
		opts               *Options
		wantRoute, wantAll int64
	}{
		{"nil", nil, DefaultRouteBytes, DefaultTotalBytes},
		{"zero", &Options{}, DefaultRouteBytes, DefaultTotalBytes},
		{"negative", &Options{RouteBytes: -1, TotalBytes: -1}, DefaultRouteBytes, DefaultTotalBytes},
		{"route above total", &Options{RouteBytes: 10 << 20, TotalBytes: 4 << 20}, 4 << 20, 4 << 20},
		{"total below the default route", &Options{TotalBytes: 1 << 20}, 1 << 20, 1 << 20},
		{"both set", &Options{RouteBytes: 1 << 20, TotalBytes: 1 << 30}, 1 << 20, 1 << 30},
	} {
		t.Run(tc.name, func(t *testing.T) {
			route, total := tc.opts.Bounds()
			if route != tc.wantRoute || total != tc.wantAll {
				t.Fatalf("Bounds() = %d, %d; want %d, %d", route, total, tc.wantRoute, tc.wantAll)
			}
		})
	}
}

// broadcast wakes every goroutine waiting on the channel it handed out
// last.
type broadcast struct {
	mu sync.Mutex
	ch chan struct{} // guarded by mu; closed and replaced by signal
}

func newBroadcast() *broadcast { return &broadcast{ch: make(chan struct{})} }

func (b *broadcast) wait() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.ch
}

func (b *broadcast) signal() {
	b.mu.Lock()
	defer b.mu.Unlock()
	close(b.ch)
	b.ch = make(chan struct{})
}

// Senders race receivers on a store whose total holds less than they keep
// in flight: senders refused for a full store wait for a delete and send
// again, receivers that find their queue empty wait for a send, and in the
// end every message arrived once, in order, and the bytes held are back to
// zero. Each route has at most two messages in flight, so no route reaches
// its own bound (at most the total) and nothing is dropped; together they
// have more than the total holds, and receivers start once a sender has
// been refused.
func TestSendsRacingDeletesFreeTheirBytes(t *testing.T) {
	forEachStore(t, func(t *testing.T, open func(*Options) Store) {
		const routes, window = 6, 2
		each := 40
		total := 8 * entrySize
		s := open(&Options{TotalBytes: total})
		if _, ok := s.(*NATS); ok {
			each = 15 // three requests per message to a server
		}
		freed, stored := newBroadcast(), newBroadcast()
		firstRefusal := make(chan struct{})
		var refusedOnce sync.Once
		// A failure stops every goroutine, so none waits for a peer
		// that has given up.
		ctx, stop := context.WithCancel(t.Context())
		defer stop()
		var (
			wg   sync.WaitGroup
			mu   sync.Mutex
			errs []error
		)
		fail := func(err error) {
			mu.Lock()
			errs = append(errs, err)
			mu.Unlock()
			stop()
		}
		// wait reports whether ch fired before the test stopped.
		wait := func(ch <-chan struct{}) bool {
			select {
			case <-ch:
				return true
			case <-ctx.Done():
				return false
			}
		}
		for r := range routes {
			route := "K#" + strconv.Itoa(r)
			// A token per message sent and not yet deleted.
			inFlight := make(chan struct{}, window)
			wg.Go(func() { // sender
				for i := 0; i < each; {
					select {
					case inFlight <- struct{}{}:
					case <-ctx.Done():
						return
					}
					for {
						woken := freed.wait()
						_, dropped, err := s.Enqueue(route, value(route+"/"+itoa(i)))
						if errors.Is(err, ErrFull) {
							refusedOnce.Do(func() { close(firstRefusal) })
							if !wait(woken) {
								return
							}
							continue
						}
						if err == nil && dropped != 0 {
							err = fmt.Errorf("%s: message %d dropped %d", route, i, dropped)
						}
						if err != nil {
							fail(err)
							return
						}
						break
					}
					stored.signal()
					i++
				}
			})
			wg.Go(func() { // receiver
				if !wait(firstRefusal) {
					return
				}
				for i := 0; i < each; {
					sent := stored.wait()
					e, ok, err := s.Peek(route)
					if err != nil {
						fail(err)
						return
					}
					if !ok {
						if !wait(sent) {
							return
						}
						continue
					}
					if want := value(route + "/" + itoa(i)); !bytes.Equal(e.Value, want) {
						fail(fmt.Errorf("%s: message %d is %.12q", route, i, e.Value))
						return
					}
					if err := s.Delete(e.Key); err != nil {
						fail(err)
						return
					}
					<-inFlight
					freed.signal()
					i++
				}
			})
		}
		wg.Wait()
		if len(errs) > 0 {
			t.Fatal(errors.Join(errs...))
		}
		if diff := cmp.Diff(Totals{}, totals(t, s)); diff != "" {
			t.Fatalf("Totals after every message was deleted (-want +got):\n%s", diff)
		}
	})
}
