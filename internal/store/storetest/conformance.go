package storetest

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/interlink-go/interlink/internal/store"
)

// The queue tests: order, routes, the cap, keys, deletes and closing.

func testFIFOAcrossDeletes(t *testing.T, bk Backend) {
	s := bk.Open(t, nil)
	const route = "K#s"
	keyRE := regexp.MustCompile("^K#s\x00[0-9]{20}$")
	var keys []string
	for i := range 100 {
		key, dropped := Enqueue(t, s, route, itoa(i))
		if dropped != 0 {
			t.Fatalf("Enqueue %d dropped %d", i, dropped)
		}
		if !keyRE.MatchString(key) {
			t.Fatalf("key %q does not match %v", key, keyRE)
		}
		if i > 0 && key <= keys[i-1] {
			t.Fatalf("key %q does not sort after %q", key, keys[i-1])
		}
		keys = append(keys, key)
	}
	if n := Depth(t, s, route); n != 100 {
		t.Fatalf("Depth = %d, want 100", n)
	}
	for i := range 100 {
		WantHead(t, s, route, keys[i], itoa(i))
		Delete(t, s, keys[i])
		if n := Depth(t, s, route); n != 99-i {
			t.Fatalf("Depth after %d deletes = %d, want %d", i+1, n, 99-i)
		}
	}
	WantEmpty(t, s, route)
}

func testPeekDoesNotRemove(t *testing.T, bk Backend) {
	s := bk.Open(t, nil)
	key, _ := Enqueue(t, s, "K#s", "hello")
	for range 2 {
		WantHead(t, s, "K#s", key, "hello")
	}
	if n := Depth(t, s, "K#s"); n != 1 {
		t.Fatalf("Depth = %d, want 1", n)
	}
}

func testDeleteThenPeek(t *testing.T, bk Backend) {
	s := bk.Open(t, nil)
	a, _ := Enqueue(t, s, "K#s", "a")
	b, _ := Enqueue(t, s, "K#s", "b")
	Delete(t, s, a)
	WantHead(t, s, "K#s", b, "b")
	Delete(t, s, b)
	WantEmpty(t, s, "K#s")
}

func testDeleteFromMiddle(t *testing.T, bk Backend) {
	s := bk.Open(t, nil)
	var keys []string
	for i := range 5 {
		k, _ := Enqueue(t, s, "K#s", itoa(i))
		keys = append(keys, k)
	}
	Delete(t, s, keys[2])
	Delete(t, s, keys[4])
	_, got := Drain(t, s, "K#s")
	if diff := cmp.Diff([]string{"0", "1", "3"}, got); diff != "" {
		t.Fatalf("drained (-want +got):\n%s", diff)
	}
}

func testDeleteAbsent(t *testing.T, bk Backend) {
	s := bk.Open(t, &store.Options{Cap: 1})
	evicted, _ := Enqueue(t, s, "K#s", "old")
	head, dropped := Enqueue(t, s, "K#s", "new")
	if dropped != 1 {
		t.Fatalf("dropped = %d, want 1", dropped)
	}
	acked, _ := Enqueue(t, s, "K#other", "x")
	Delete(t, s, acked)

	for _, tc := range []struct{ name, key string }{
		{"evicted", evicted},
		{"acked", acked},
		{"acked again", acked},
		{"never issued", store.Key("K#s", 1<<40)},
		{"unknown route", store.Key("K#nobody", 7)},
		{"empty", ""},
		{"no NUL", "K#s"},
		{"bare prefix", store.RoutePrefix("K#s")},
		{"short sequence", "K#s\x00123"},
		{"non-digits", "K#s\x00abcdefghijabcdefghij"},
		{"too long", "K#s\x00000000000000000000000"},
		{"overflow", "K#s\x0099999999999999999999"},
		{"head with suffix", head + "0"},
	} {
		if err := s.Delete(tc.key); err != nil {
			t.Errorf("%s: Delete(%q) = %v, want nil", tc.name, tc.key, err)
		}
	}
	WantHead(t, s, "K#s", head, "new")
	if n := Depth(t, s, "K#s"); n != 1 {
		t.Fatalf("Depth = %d, want 1", n)
	}
}

// A key of one route is not one of another, even of a route its route
// starts with, and each route's head is its own.
func testKeysOfOneRouteOnly(t *testing.T, bk Backend) {
	s := bk.Open(t, nil)
	k2, _ := Enqueue(t, s, "K#s2", "for s2")
	if store.HasRoute(k2, "K#s") {
		t.Fatalf("key %q of K#s2 accepted for K#s", k2)
	}
	WantEmpty(t, s, "K#s")
	k1, _ := Enqueue(t, s, "K#s", "for s")
	WantHead(t, s, "K#s", k1, "for s")
	WantHead(t, s, "K#s2", k2, "for s2")
}

func testRoutesIsolated(t *testing.T, bk Backend) {
	routes := []string{"", "K", "K#", "K#s", "K#s2", "K#s\x00x", "K#s\x01", "K#sé", "Ké#☃"}
	s := bk.Open(t, nil)
	for round := range 3 {
		for _, r := range routes {
			Enqueue(t, s, r, fmt.Sprintf("%s/%d", r, round))
		}
	}
	for _, r := range routes {
		if n := Depth(t, s, r); n != 3 {
			t.Errorf("Depth(%q) = %d, want 3", r, n)
		}
	}
	for _, r := range routes {
		keys, got := Drain(t, s, r)
		want := []string{r + "/0", r + "/1", r + "/2"}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("route %q (-want +got):\n%s", r, diff)
		}
		for _, k := range keys {
			if !store.HasRoute(k, r) || len(k) != len(r)+1+store.SeqDigits {
				t.Errorf("route %q got key %q", r, k)
			}
		}
	}
}

func testBareKeyAndSessionSeparate(t *testing.T, bk Backend) {
	s := bk.Open(t, nil)
	const bare = "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789-_AbCd"
	kb, _ := Enqueue(t, s, bare, "bare")
	ks, _ := Enqueue(t, s, bare+"#s1", "session")
	WantHead(t, s, bare, kb, "bare")
	WantHead(t, s, bare+"#s1", ks, "session")
	Delete(t, s, kb)
	WantEmpty(t, s, bare)
	WantHead(t, s, bare+"#s1", ks, "session")
}

func testManyRoutes(t *testing.T, bk Backend) {
	const perRoute = 3
	nRoutes := 10_000
	if testing.Short() {
		nRoutes = 1_000
	}
	s := bk.Open(t, nil)
	if bk.Remote {
		// Every call is a request to a server that the race
		// detector slows too; the server, not the store, holds
		// the routes.
		nRoutes = min(nRoutes, 1_000)
	}
	route := func(i int) string { return fmt.Sprintf("K#s%d", i) }
	// Workers own disjoint routes, so each route's sends stay in
	// order while a durable store can merge commits across workers.
	const workers = 64
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			for m := range perRoute {
				for i := w; i < nRoutes; i += workers {
					if _, _, err := s.Enqueue(route(i), fmt.Appendf(nil, "%d/%d", i, m)); err != nil {
						errs <- err
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for i := range nRoutes {
		if n := Depth(t, s, route(i)); n != perRoute {
			t.Fatalf("Depth(%q) = %d, want %d", route(i), n, perRoute)
		}
		WantHead(t, s, route(i), "", fmt.Sprintf("%d/0", i))
	}
	// Draining costs one commit per entry on disk and three
	// requests per entry in JetStream; drain a sample there, and
	// every route in memory.
	step := 1
	if bk.Slow {
		step = 97
	}
	for i := 0; i < nRoutes; i += step {
		_, got := Drain(t, s, route(i))
		want := []string{fmt.Sprintf("%d/0", i), fmt.Sprintf("%d/1", i), fmt.Sprintf("%d/2", i)}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("route %q (-want +got):\n%s", route(i), diff)
		}
	}
}

func testOverflowDropOldest(t *testing.T, bk Backend) {
	for _, tc := range []struct {
		name      string
		cap       int
		sends     int
		wantDepth int
		wantHead  string
	}{
		{"cap 2", 2, 4, 2, "2"},
		{"cap 3", 3, 8, 3, "5"},
		{"cap 1", 1, 3, 1, "2"},
		{"default cap", 0, store.DefaultCap + 6, store.DefaultCap, "6"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := bk.Open(t, &store.Options{Cap: tc.cap})
			capacity := tc.cap
			if capacity == 0 {
				capacity = store.DefaultCap
			}
			total := 0
			for i := range tc.sends {
				_, dropped := Enqueue(t, s, "K#s", itoa(i))
				if want := max(0, i+1-capacity) - max(0, i-capacity); dropped != want {
					t.Fatalf("send %d dropped %d, want %d", i, dropped, want)
				}
				total += dropped
			}
			if want := tc.sends - tc.wantDepth; total != want {
				t.Fatalf("dropped %d in total, want %d", total, want)
			}
			if n := Depth(t, s, "K#s"); n != tc.wantDepth {
				t.Fatalf("Depth = %d, want %d", n, tc.wantDepth)
			}
			WantHead(t, s, "K#s", "", tc.wantHead)
		})
	}
}

func testConcurrentEnqueue(t *testing.T, bk Backend) {
	const (
		goroutines = 50
		each       = 100
		capacity   = 64
	)
	s := bk.Open(t, &store.Options{Cap: capacity})
	type result struct {
		key     string
		dropped int
		err     error
	}
	results := make(chan result, goroutines*each)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range each {
				key, dropped, err := s.Enqueue("K#s", fmt.Appendf(nil, "%d/%d", g, i))
				results <- result{key, dropped, err}
			}
		})
	}
	wg.Wait()
	close(results)
	var keys []string
	totalDropped := 0
	for r := range results {
		if r.err != nil {
			t.Fatalf("Enqueue: %v", r.err)
		}
		keys = append(keys, r.key)
		totalDropped += r.dropped
	}
	slices.SortFunc(keys, func(a, b string) int { return cmpSeq(t, a, b) })
	if len(slices.Compact(slices.Clone(keys))) != len(keys) {
		t.Fatal("a key was handed out twice")
	}
	if want := goroutines*each - capacity; totalDropped != want {
		t.Fatalf("dropped %d in total, want %d", totalDropped, want)
	}
	if n := Depth(t, s, "K#s"); n != capacity {
		t.Fatalf("Depth = %d, want %d", n, capacity)
	}
	got, _ := Drain(t, s, "K#s")
	if diff := cmp.Diff(keys[len(keys)-capacity:], got); diff != "" {
		t.Fatalf("survivors are not the newest %d in order (-want +got):\n%s", capacity, diff)
	}
}

func cmpSeq(tb testing.TB, a, b string) int {
	x, y := SeqOf(tb, a), SeqOf(tb, b)
	switch {
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}

func testValuesCopied(t *testing.T, bk Backend) {
	s := bk.Open(t, nil)
	buf := []byte("original")
	if _, _, err := s.Enqueue("K#s", buf); err != nil {
		t.Fatal(err)
	}
	copy(buf, "CHANGED!")
	e, _ := Peek(t, s, "K#s")
	if string(e.Value) != "original" {
		t.Fatalf("stored value = %q after the caller reused its buffer", e.Value)
	}
	copy(e.Value, "CHANGED!")
	WantHead(t, s, "K#s", "", "original")
}

func testEmptyValue(t *testing.T, bk Backend) {
	s := bk.Open(t, nil)
	for _, v := range [][]byte{nil, {}} {
		key, _, err := s.Enqueue("K#s", v)
		if err != nil {
			t.Fatal(err)
		}
		e, ok := Peek(t, s, "K#s")
		if !ok || e.Key != key || len(e.Value) != 0 {
			t.Fatalf("Peek = %q, %v, want key %q with an empty value", e.Value, ok, key)
		}
		Delete(t, s, key)
	}
}

func testLargeValue(t *testing.T, bk Backend) {
	s := bk.Open(t, nil)
	value := make([]byte, 2<<20)
	rng := rand.NewChaCha8([32]byte{1})
	_, _ = rng.Read(value)
	key, _, err := s.Enqueue("K#s", value)
	if err != nil {
		t.Fatal(err)
	}
	e, ok := Peek(t, s, "K#s")
	if !ok || e.Key != key || !bytes.Equal(e.Value, value) {
		t.Fatalf("Peek returned %d bytes under key %q, want the %d bytes stored", len(e.Value), e.Key, len(value))
	}
}

func testClosed(t *testing.T, bk Backend) {
	s := bk.Open(t, nil)
	key, _ := Enqueue(t, s, "K#s", "x")
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if _, _, err := s.Enqueue("K#s", []byte("y")); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Enqueue after Close: %v, want ErrClosed", err)
	}
	if _, _, err := s.Peek("K#s"); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Peek after Close: %v, want ErrClosed", err)
	}
	if err := s.Delete(key); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Delete after Close: %v, want ErrClosed", err)
	}
	if err := s.Delete("malformed"); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Delete of a malformed key after Close: %v, want ErrClosed", err)
	}
	if _, err := s.Depth("K#s"); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Depth after Close: %v, want ErrClosed", err)
	}
	if err := s.Close(); !errors.Is(err, store.ErrClosed) {
		t.Errorf("second Close: %v, want ErrClosed", err)
	}
}

// A key made of one route and the sequence of another route's entry
// deletes nothing.
func testDeleteWithAnotherRoutesSequence(t *testing.T, bk Backend) {
	s := bk.Open(t, nil)
	ka, _ := Enqueue(t, s, "K#a", "for a")
	kb, _ := Enqueue(t, s, "K#b", "for b")
	for _, key := range []string{store.Key("K#b", SeqOf(t, ka)), store.Key("K#a", SeqOf(t, kb)), store.Key("K#", SeqOf(t, ka)), store.Key("K#a\x00", SeqOf(t, ka))} {
		Delete(t, s, key)
	}
	WantHead(t, s, "K#a", ka, "for a")
	WantHead(t, s, "K#b", kb, "for b")
}

// Totals counts the routes with entries and the entries, and bytes for
// entries only.
func testTotalsCountRoutesAndEntries(t *testing.T, bk Backend) {
	s := bk.Open(t, nil)
	tot, ok := s.(store.Totaler)
	if !ok {
		t.Skipf("%T does not report totals", s)
	}
	check := func(wantRoutes, wantEntries int) {
		t.Helper()
		got, err := tot.Totals()
		if err != nil || got.Routes != wantRoutes || got.Entries != wantEntries {
			t.Fatalf("Totals = %d routes, %d entries, %v; want %d, %d", got.Routes, got.Entries, err, wantRoutes, wantEntries)
		}
		if (got.Bytes == 0) != (wantEntries == 0) {
			t.Fatalf("Totals = %d bytes for %d entries", got.Bytes, wantEntries)
		}
	}
	check(0, 0)
	var keys []string
	for _, route := range []string{"a", "a", "b", "c#s", "c#s", "c#s"} {
		k, _, err := s.Enqueue(route, []byte(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k)
	}
	check(3, 6)
	if err := s.Delete(keys[2]); err != nil {
		t.Fatal(err)
	}
	check(2, 5)
}
