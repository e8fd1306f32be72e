package store_test

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/interlink-go/interlink/internal/store"
	"github.com/interlink-go/interlink/internal/store/storetest"
)

// memory is the backend of the conformance tests: a new Memory, checked
// and closed when the test ends.
var memory = storetest.Backend{
	Open: func(tb testing.TB, opts *store.Options) store.Store { return openMemory(tb, opts) },
}

func TestMemoryConformance(t *testing.T) { storetest.Run(t, memory) }

// openMemory returns a new Memory that is checked and closed at cleanup.
func openMemory(tb testing.TB, opts *store.Options) *store.Memory {
	tb.Helper()
	m := store.NewMemory(opts)
	tb.Cleanup(func() {
		if err := store.CheckMemory(m); err != nil {
			tb.Errorf("store invariants: %v", err)
		}
		m.Close()
	})
	return m
}

var (
	enqueue   = storetest.Enqueue
	del       = storetest.Delete
	drain     = storetest.Drain
	seqOf     = storetest.SeqOf
	wantEmpty = storetest.WantEmpty
	wantHead  = storetest.WantHead
)

func itoa(i int) string { return strconv.Itoa(i) }

func TestMemorySequenceFromClock(t *testing.T) {
	start := time.Unix(1_700_000_000, 123)
	m := openMemory(t, &store.Options{Now: func() time.Time { return start }})
	k1, _ := enqueue(t, m, "K#s", "a")
	k2, _ := enqueue(t, m, "L#s", "b")
	if want := store.Key("K#s", uint64(start.UnixNano())); k1 != want {
		t.Fatalf("first key = %q, want %q", k1, want)
	}
	if want := store.Key("L#s", uint64(start.UnixNano())+1); k2 != want {
		t.Fatalf("second key = %q, want %q", k2, want)
	}

	before := openMemory(t, &store.Options{Now: func() time.Time { return time.Unix(-5, 0) }})
	if k, _ := enqueue(t, before, "K#s", "a"); k != store.Key("K#s", 0) {
		t.Fatalf("key with a clock before 1970 = %q, want sequence 0", k)
	}
}

// Nothing survives a restart, and a key from before the restart cannot
// delete a newer entry.
func TestMemoryRestartStartsEmpty(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	m := openMemory(t, &store.Options{Now: func() time.Time { return now }})
	var old string
	for i := range 1000 {
		old, _ = enqueue(t, m, "K#s", itoa(i))
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}

	now = now.Add(time.Millisecond)
	m = openMemory(t, &store.Options{Now: func() time.Time { return now }})
	wantEmpty(t, m, "K#s")
	k, _ := enqueue(t, m, "K#s", "new")
	if seqOf(t, k) <= seqOf(t, old) {
		t.Fatalf("key %q after the restart does not follow %q", k, old)
	}
	del(t, m, old)
	wantHead(t, m, "K#s", k, "new")
}

func TestMemoryDropsEmptyQueues(t *testing.T) {
	m := openMemory(t, nil)
	for i := range 1000 {
		k, _ := enqueue(t, m, fmt.Sprintf("K#s%d", i), "x")
		del(t, m, k)
	}
	for i := range 10 {
		enqueue(t, m, "L#s", itoa(i))
	}
	drain(t, m, "L#s")
	if n, _, _ := store.MemoryQueues(m, ""); n != 0 {
		t.Fatalf("%d queues left after every queue was drained", n)
	}
}

// A queue that stays full keeps a bounded backing array: dropping the oldest
// compacts it now and then instead of letting it grow.
func TestMemoryFullQueueStaysBounded(t *testing.T) {
	const capacity = 100
	m := openMemory(t, &store.Options{Cap: capacity})
	for i := range 100 * capacity {
		enqueue(t, m, "K#s", itoa(i))
		_, n, live := store.MemoryQueues(m, "K#s")
		if n > 2*capacity+2 {
			t.Fatalf("after %d sends the queue holds %d slots for %d entries", i+1, n, live)
		}
	}
	wantHead(t, m, "K#s", "", itoa(99*capacity))
}
