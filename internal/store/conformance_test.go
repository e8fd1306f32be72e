package store

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
)

// The tests in this file run against every implementation; they follow
// groups B and D of the bus specification's test list at the store level.

func TestFIFOAcrossDeletes(t *testing.T) {
	forEachStore(t, func(t *testing.T, open func(*Options) Store) {
		s := open(nil)
		const route = "K#s"
		keyRE := regexp.MustCompile("^K#s\x00[0-9]{20}$")
		var keys []string
		for i := range 100 {
			key, dropped := enqueue(t, s, route, itoa(i))
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
		if n := depth(t, s, route); n != 100 {
			t.Fatalf("Depth = %d, want 100", n)
		}
		for i := range 100 {
			wantHead(t, s, route, keys[i], itoa(i))
			del(t, s, keys[i])
			if n := depth(t, s, route); n != 99-i {
				t.Fatalf("Depth after %d deletes = %d, want %d", i+1, n, 99-i)
			}
		}
		wantEmpty(t, s, route)
	})
}

func TestPeekDoesNotRemove(t *testing.T) {
	forEachStore(t, func(t *testing.T, open func(*Options) Store) {
		s := open(nil)
		key, _ := enqueue(t, s, "K#s", "hello")
		for range 2 {
			wantHead(t, s, "K#s", key, "hello")
		}
		if n := depth(t, s, "K#s"); n != 1 {
			t.Fatalf("Depth = %d, want 1", n)
		}
	})
}

func TestDeleteThenPeek(t *testing.T) {
	forEachStore(t, func(t *testing.T, open func(*Options) Store) {
		s := open(nil)
		a, _ := enqueue(t, s, "K#s", "a")
		b, _ := enqueue(t, s, "K#s", "b")
		del(t, s, a)
		wantHead(t, s, "K#s", b, "b")
		del(t, s, b)
		wantEmpty(t, s, "K#s")
	})
}

func TestDeleteFromMiddle(t *testing.T) {
	forEachStore(t, func(t *testing.T, open func(*Options) Store) {
		s := open(nil)
		var keys []string
		for i := range 5 {
			k, _ := enqueue(t, s, "K#s", itoa(i))
			keys = append(keys, k)
		}
		del(t, s, keys[2])
		del(t, s, keys[4])
		_, got := drain(t, s, "K#s")
		if diff := cmp.Diff([]string{"0", "1", "3"}, got); diff != "" {
			t.Fatalf("drained (-want +got):\n%s", diff)
		}
	})
}

func TestDeleteAbsent(t *testing.T) {
	forEachStore(t, func(t *testing.T, open func(*Options) Store) {
		s := open(&Options{Cap: 1})
		evicted, _ := enqueue(t, s, "K#s", "old")
		head, dropped := enqueue(t, s, "K#s", "new")
		if dropped != 1 {
			t.Fatalf("dropped = %d, want 1", dropped)
		}
		acked, _ := enqueue(t, s, "K#other", "x")
		del(t, s, acked)

		for _, tc := range []struct{ name, key string }{
			{"evicted", evicted},
			{"acked", acked},
			{"acked again", acked},
			{"never issued", Key("K#s", 1<<40)},
			{"unknown route", Key("K#nobody", 7)},
			{"empty", ""},
			{"no NUL", "K#s"},
			{"bare prefix", RoutePrefix("K#s")},
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
		wantHead(t, s, "K#s", head, "new")
		if n := depth(t, s, "K#s"); n != 1 {
			t.Fatalf("Depth = %d, want 1", n)
		}
	})
}

func TestHasRoute(t *testing.T) {
	for _, tc := range []struct {
		key, route string
		want       bool
	}{
		{Key("K#s", 1), "K#s", true},
		{Key("K#s2", 1), "K#s", false},
		{Key("K#s", 1), "K#s2", false},
		{Key("K", 1), "K#s", false},
		{Key("K#s", 1), "K", false},
		{Key("", 1), "", true},
		{Key("K#s", 1), "", false},
		{"K#s", "K#s", false},
	} {
		if got := HasRoute(tc.key, tc.route); got != tc.want {
			t.Errorf("HasRoute(%q, %q) = %v, want %v", tc.key, tc.route, got, tc.want)
		}
	}
	forEachStore(t, func(t *testing.T, open func(*Options) Store) {
		s := open(nil)
		k2, _ := enqueue(t, s, "K#s2", "for s2")
		if HasRoute(k2, "K#s") {
			t.Fatalf("key %q of K#s2 accepted for K#s", k2)
		}
		wantEmpty(t, s, "K#s")
		k1, _ := enqueue(t, s, "K#s", "for s")
		wantHead(t, s, "K#s", k1, "for s")
		wantHead(t, s, "K#s2", k2, "for s2")
	})
}

func TestRoutesIsolated(t *testing.T) {
	routes := []string{"", "K", "K#", "K#s", "K#s2", "K#s\x00x", "K#s\x01", "K#sé", "Ké#☃"}
	forEachStore(t, func(t *testing.T, open func(*Options) Store) {
		s := open(nil)
		for round := range 3 {
			for _, r := range routes {
				enqueue(t, s, r, fmt.Sprintf("%s/%d", r, round))
			}
		}
		for _, r := range routes {
			if n := depth(t, s, r); n != 3 {
				t.Errorf("Depth(%q) = %d, want 3", r, n)
			}
		}
		for _, r := range routes {
			keys, got := drain(t, s, r)
			want := []string{r + "/0", r + "/1", r + "/2"}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("route %q (-want +got):\n%s", r, diff)
			}
			for _, k := range keys {
				if !HasRoute(k, r) || len(k) != len(r)+1+seqDigits {
					t.Errorf("route %q got key %q", r, k)
				}
			}
		}
	})
}

func TestBareKeyAndSessionSeparate(t *testing.T) {
	forEachStore(t, func(t *testing.T, open func(*Options) Store) {
		s := open(nil)
		const bare = "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789-_AbCd"
		kb, _ := enqueue(t, s, bare, "bare")
		ks, _ := enqueue(t, s, bare+"#s1", "session")
		wantHead(t, s, bare, kb, "bare")
		wantHead(t, s, bare+"#s1", ks, "session")
		del(t, s, kb)
		wantEmpty(t, s, bare)
		wantHead(t, s, bare+"#s1", ks, "session")
	})
}

func TestManyRoutes(t *testing.T) {
	const perRoute = 3
	nRoutes := 10_000
	if testing.Short() {
		nRoutes = 1_000
	}
	forEachStore(t, func(t *testing.T, open func(*Options) Store) {
		s := open(nil)
		nRoutes := nRoutes
		if _, ok := s.(*NATS); ok {
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
			if n := depth(t, s, route(i)); n != perRoute {
				t.Fatalf("Depth(%q) = %d, want %d", route(i), n, perRoute)
			}
			wantHead(t, s, route(i), "", fmt.Sprintf("%d/0", i))
		}
		// Draining costs one commit per entry on disk and three
		// requests per entry in JetStream; drain a sample there, and
		// every route in memory.
		step := 1
		if _, ok := s.(*Bolt); ok {
			step = 97
		}
		if _, ok := s.(*NATS); ok {
			step = 97
		}
		for i := 0; i < nRoutes; i += step {
			_, got := drain(t, s, route(i))
			want := []string{fmt.Sprintf("%d/0", i), fmt.Sprintf("%d/1", i), fmt.Sprintf("%d/2", i)}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("route %q (-want +got):\n%s", route(i), diff)
			}
		}
	})
}

func TestOverflowDropOldest(t *testing.T) {
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
		{"default cap", 0, DefaultCap + 6, DefaultCap, "6"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			forEachStore(t, func(t *testing.T, open func(*Options) Store) {
				s := open(&Options{Cap: tc.cap})
				capacity := tc.cap
				if capacity == 0 {
					capacity = DefaultCap
				}
				total := 0
				for i := range tc.sends {
					_, dropped := enqueue(t, s, "K#s", itoa(i))
					if want := max(0, i+1-capacity) - max(0, i-capacity); dropped != want {
						t.Fatalf("send %d dropped %d, want %d", i, dropped, want)
					}
					total += dropped
				}
				if want := tc.sends - tc.wantDepth; total != want {
					t.Fatalf("dropped %d in total, want %d", total, want)
				}
				if n := depth(t, s, "K#s"); n != tc.wantDepth {
					t.Fatalf("Depth = %d, want %d", n, tc.wantDepth)
				}
				wantHead(t, s, "K#s", "", tc.wantHead)
			})
		})
	}
}

func TestConcurrentEnqueue(t *testing.T) {
	const (
		goroutines = 50
		each       = 100
		capacity   = 64
	)
	forEachStore(t, func(t *testing.T, open func(*Options) Store) {
		s := open(&Options{Cap: capacity})
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
		if n := depth(t, s, "K#s"); n != capacity {
			t.Fatalf("Depth = %d, want %d", n, capacity)
		}
		got, _ := drain(t, s, "K#s")
		if diff := cmp.Diff(keys[len(keys)-capacity:], got); diff != "" {
			t.Fatalf("survivors are not the newest %d in order (-want +got):\n%s", capacity, diff)
		}
	})
}

func cmpSeq(tb testing.TB, a, b string) int {
	x, y := seqOf(tb, a), seqOf(tb, b)
	switch {
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}

func TestValuesCopied(t *testing.T) {
	forEachStore(t, func(t *testing.T, open func(*Options) Store) {
		s := open(nil)
		buf := []byte("original")
		if _, _, err := s.Enqueue("K#s", buf); err != nil {
			t.Fatal(err)
		}
		copy(buf, "CHANGED!")
		e, _ := peek(t, s, "K#s")
		if string(e.Value) != "original" {
			t.Fatalf("stored value = %q after the caller reused its buffer", e.Value)
		}
		copy(e.Value, "CHANGED!")
		wantHead(t, s, "K#s", "", "original")
	})
}

func TestEmptyValue(t *testing.T) {
	forEachStore(t, func(t *testing.T, open func(*Options) Store) {
		s := open(nil)
		for _, v := range [][]byte{nil, {}} {
			key, _, err := s.Enqueue("K#s", v)
			if err != nil {
				t.Fatal(err)
			}
			e, ok := peek(t, s, "K#s")
			if !ok || e.Key != key || len(e.Value) != 0 {
				t.Fatalf("Peek = %q, %v, want key %q with an empty value", e.Value, ok, key)
			}
			del(t, s, key)
		}
	})
}

func TestLargeValue(t *testing.T) {
	forEachStore(t, func(t *testing.T, open func(*Options) Store) {
		s := open(nil)
		value := make([]byte, 2<<20)
		rng := rand.NewChaCha8([32]byte{1})
		_, _ = rng.Read(value)
		key, _, err := s.Enqueue("K#s", value)
		if err != nil {
			t.Fatal(err)
		}
		e, ok := peek(t, s, "K#s")
		if !ok || e.Key != key || !bytes.Equal(e.Value, value) {
			t.Fatalf("Peek returned %d bytes under key %q, want the %d bytes stored", len(e.Value), e.Key, len(value))
		}
	})
}

func TestClosed(t *testing.T) {
	forEachStore(t, func(t *testing.T, open func(*Options) Store) {
		s := open(nil)
		key, _ := enqueue(t, s, "K#s", "x")
		if err := s.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		if _, _, err := s.Enqueue("K#s", []byte("y")); !errors.Is(err, ErrClosed) {
			t.Errorf("Enqueue after Close: %v, want ErrClosed", err)
		}
		if _, _, err := s.Peek("K#s"); !errors.Is(err, ErrClosed) {
			t.Errorf("Peek after Close: %v, want ErrClosed", err)
		}
		if err := s.Delete(key); !errors.Is(err, ErrClosed) {
			t.Errorf("Delete after Close: %v, want ErrClosed", err)
		}
		if err := s.Delete("malformed"); !errors.Is(err, ErrClosed) {
			t.Errorf("Delete of a malformed key after Close: %v, want ErrClosed", err)
		}
		if _, err := s.Depth("K#s"); !errors.Is(err, ErrClosed) {
			t.Errorf("Depth after Close: %v, want ErrClosed", err)
		}
		if err := s.Close(); !errors.Is(err, ErrClosed) {
			t.Errorf("second Close: %v, want ErrClosed", err)
		}
	})
}

// A key made of one route and the sequence of another route's entry
// deletes nothing.
func TestDeleteWithAnotherRoutesSequence(t *testing.T) {
	forEachStore(t, func(t *testing.T, open func(*Options) Store) {
		s := open(nil)
		ka, _ := enqueue(t, s, "K#a", "for a")
		kb, _ := enqueue(t, s, "K#b", "for b")
		for _, key := range []string{Key("K#b", seqOf(t, ka)), Key("K#a", seqOf(t, kb)), Key("K#", seqOf(t, ka)), Key("K#a\x00", seqOf(t, ka))} {
			del(t, s, key)
		}
		wantHead(t, s, "K#a", ka, "for a")
		wantHead(t, s, "K#b", kb, "for b")
	})
}

func TestTotalsCountRoutesAndEntries(t *testing.T) {
	forEachStore(t, func(t *testing.T, open func(*Options) Store) {
		s := open(nil)
		tot, ok := s.(Totaler)
		if !ok {
			t.Fatalf("%T does not report totals", s)
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
	})
}
