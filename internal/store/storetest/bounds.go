package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/interlink-go/interlink/internal/store"
)

// The byte bounds: the total refuses, a route's bytes drop its oldest
// entries, an entry too large for any route is refused for good.

// Many routes, each far under its own bound, together reach the total: the
// store refuses the next entry, whatever its route, and keeps every entry
// it had accepted; a delete makes room again.
func testTotalBytesRefuseAndKeepWhatWasStored(t *testing.T, bk Backend) {
	const total = 10_000
	s := bk.Open(t, &store.Options{RouteBytes: 4_000, TotalBytes: total})
	keys := FillRoutes(t, s, total)
	if !bk.OwnByteCount && len(keys) != int(total/EntrySize) {
		t.Fatalf("stored %d entries of %d bytes under a total of %d", len(keys), EntrySize, total)
	}
	if len(keys) < 2 {
		t.Fatalf("stored %d entries", len(keys))
	}
	if got, ok := Totals(t, s); ok && (got.Entries != len(keys) || got.Bytes > total) {
		t.Fatalf("Totals = %+v after %d entries, bound %d", got, len(keys), total)
	}
	// A route that has entries is refused too: its own bound is far.
	_, _, err := s.Enqueue("K#0", Value("K#0 again"))
	WantBound(t, err, store.ErrFull, total)
	if n := Depth(t, s, "K#0"); n != 1 {
		t.Fatalf("Depth(K#0) = %d after a refused enqueue, want 1", n)
	}
	for i, key := range keys {
		route := "K#" + strconv.Itoa(i)
		WantHead(t, s, route, key, string(Value(route)))
	}

	// Route names of the same length make entries of the same size
	// in every store.
	Delete(t, s, keys[0])
	Enqueue(t, s, "K#n", string(Value("K#n")))
	_, _, err = s.Enqueue("K#m", Value("K#m"))
	WantBound(t, err, store.ErrFull, total)
}

// One route filled with large values keeps at most its byte bound,
// dropping its oldest entries, as the cap does; a larger value drops as
// many as it needs. JetStream has no per-subject byte limit.
func testRouteBytesDropOldest(t *testing.T, bk Backend) {
	routeBytes := 3*EntrySize + EntrySize/2
	s := bk.Open(t, &store.Options{RouteBytes: routeBytes, TotalBytes: 1 << 20})
	if bk.NoRouteBytes {
		t.Skip("the store drops no entries for a route's bytes")
	}
	for i := range 7 {
		_, dropped := Enqueue(t, s, "K#0", string(Value(itoa(i))))
		if want := min(1, max(0, i-2)); dropped != want {
			t.Fatalf("send %d dropped %d, want %d", i, dropped, want)
		}
	}
	if n := Depth(t, s, "K#0"); n != 3 {
		t.Fatalf("Depth = %d, want 3", n)
	}
	WantHead(t, s, "K#0", "", string(Value("4")))
	if got, ok := Totals(t, s); ok && got.Bytes != 3*EntrySize {
		t.Fatalf("store.Totals.Bytes = %d, want %d", got.Bytes, 3*EntrySize)
	}

	// A value three times as large leaves room for nothing else.
	big := bytes.Repeat([]byte{'B'}, int(routeBytes-store.EntrySize("K#0", 0)))
	_, dropped := Enqueue(t, s, "K#0", string(big))
	if dropped != 3 {
		t.Fatalf("a value of %d bytes dropped %d, want 3", len(big), dropped)
	}
	WantHead(t, s, "K#0", "", string(big))
	if got, ok := Totals(t, s); ok && (got.Entries != 1 || got.Bytes != routeBytes) {
		t.Fatalf("Totals = %+v, want 1 entry of %d bytes", got, routeBytes)
	}
	// Other routes are not touched by K#0's drops.
	Enqueue(t, s, "K#1", "other")
	Enqueue(t, s, "K#0", "small")
	WantHead(t, s, "K#1", "", "other")
}

// A full route that the cap makes drop its oldest entry takes a new one of
// the same size even when the store is at its total: the drop frees what
// the new entry takes. A route with room under the cap gets no such
// credit, and is refused.
func testCapDropMakesRoomInTheTotal(t *testing.T, bk Backend) {
	const total = 6_000
	s := bk.Open(t, &store.Options{Cap: 2, RouteBytes: 1 << 20, TotalBytes: total})
	first, _ := Enqueue(t, s, "K#a", string(Value("a0")))
	Enqueue(t, s, "K#a", string(Value("a1")))
	others := FillRoutes(t, s, total)
	if len(others) == 0 {
		t.Fatal("no room for another route")
	}

	_, dropped, err := s.Enqueue("K#a", Value("a2"))
	if err != nil || dropped != 1 {
		t.Fatalf("Enqueue to a route at its cap in a full store: dropped %d, %v; want 1, nil", dropped, err)
	}
	WantHead(t, s, "K#a", "", string(Value("a1")))
	if err := s.Delete(first); err != nil {
		t.Fatal(err)
	}
	if n := Depth(t, s, "K#a"); n != 2 {
		t.Fatalf("Depth(K#a) = %d, want 2", n)
	}
	_, _, err = s.Enqueue("K#0", Value("K#0 again"))
	WantBound(t, err, store.ErrFull, total)
}

// An entry larger than a route may hold is refused for good, on every
// store, and stores nothing.
func testEntryOverRouteBytesIsTooLarge(t *testing.T, bk Backend) {
	const routeBytes = 3_000
	s := bk.Open(t, &store.Options{RouteBytes: routeBytes, TotalBytes: 1 << 20})
	fits := bytes.Repeat([]byte{'f'}, int(routeBytes-store.EntrySize("K#0", 0)))
	Enqueue(t, s, "K#0", string(fits))
	_, _, err := s.Enqueue("K#1", append(fits, 'x'))
	be := WantBound(t, err, store.ErrTooLarge, routeBytes)
	if be.Size != routeBytes+1 {
		t.Fatalf("refusal reports %d bytes, want %d", be.Size, routeBytes+1)
	}
	if errors.Is(err, store.ErrFull) {
		t.Fatal("a value too large for any route reads as a full store")
	}
	WantEmpty(t, s, "K#1")
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
func testSendsRacingDeletesFreeTheirBytes(t *testing.T, bk Backend) {
	const routes, window = 6, 2
	each := 40
	total := 8 * EntrySize
	s := bk.Open(t, &store.Options{TotalBytes: total})
	if bk.Remote {
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
					_, dropped, err := s.Enqueue(route, Value(route+"/"+itoa(i)))
					if errors.Is(err, store.ErrFull) {
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
				if want := Value(route + "/" + itoa(i)); !bytes.Equal(e.Value, want) {
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
	if got, ok := Totals(t, s); ok {
		if diff := cmp.Diff(store.Totals{}, got); diff != "" {
			t.Fatalf("Totals after every message was deleted (-want +got):\n%s", diff)
		}
	}
}
