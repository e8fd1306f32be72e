package bolt

import (
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	bbolt "go.etcd.io/bbolt"

	"github.com/interlink-go/interlink/internal/store"
	"github.com/interlink-go/interlink/internal/testutil"
)

// never is an AckDelay long enough that no acknowledgement is committed on
// its own while a test runs.
const never = time.Hour

// stored reports whether key is in the file as of the last commit.
func stored(t *testing.T, s *Store, key string) bool {
	t.Helper()
	var ok bool
	if err := s.db.View(func(tx *bbolt.Tx) error {
		ok = tx.Bucket(bucketMessages).Get([]byte(key)) != nil
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return ok
}

func TestBoltAckHidesEntryBeforeItsCommit(t *testing.T) {
	t.Parallel()
	s := openBolt(t, newBoltPath(t), &Options{AckDelay: never})
	a, _ := enqueue(t, s, "K#s", "a")
	b, _ := enqueue(t, s, "K#s", "b")
	before := txID(t, s)
	del(t, s, a)
	if n := txID(t, s) - before; n != 0 {
		t.Fatalf("the acknowledgement made %d commits before Delete returned, want 0", n)
	}
	if !stored(t, s, a) {
		t.Fatal("the acknowledged entry left the file before any commit")
	}
	wantHead(t, s, "K#s", b, "b")
	if n := depth(t, s, "K#s"); n != 1 {
		t.Fatalf("Depth = %d, want 1: the acknowledged entry is still counted", n)
	}
	del(t, s, a) // again, as a receiver retrying its ack would
	if n := depth(t, s, "K#s"); n != 1 {
		t.Fatalf("Depth after a second ack = %d, want 1", n)
	}
	del(t, s, b)
	wantEmpty(t, s, "K#s")
}

func TestBoltAckSharesTheNextEnqueuesCommit(t *testing.T) {
	t.Parallel()
	s := openBolt(t, newBoltPath(t), &Options{AckDelay: never})
	a, _ := enqueue(t, s, "K#s", "a")
	del(t, s, a)
	before := txID(t, s)
	b, _ := enqueue(t, s, "K#t", "b")
	if n := txID(t, s) - before; n != 1 {
		t.Fatalf("enqueue after an ack took %d commits, want 1", n)
	}
	if stored(t, s, a) {
		t.Fatal("the acknowledged entry is still in the file after the next commit")
	}
	if !stored(t, s, b) {
		t.Fatal("the new entry is not in the file")
	}
	wantEmpty(t, s, "K#s")
	if err := checkInvariants(s); err != nil {
		t.Fatal(err)
	}
}

func TestBoltAckCommitsOnItsOwnAfterTheDelay(t *testing.T) {
	t.Parallel()
	s := openBolt(t, newBoltPath(t), &Options{AckDelay: 5 * time.Millisecond})
	a, _ := enqueue(t, s, "K#s", "a")
	del(t, s, a)
	// The store forgets the key only after the commit that deleted it.
	testutil.Eventually(t, 10*time.Second, "the acknowledgement committed and forgotten", func() bool {
		return s.w.ackedLen() == 0
	})
	if stored(t, s, a) {
		t.Fatal("the acknowledgement was forgotten but the entry is still in the file")
	}
}

func TestBoltCloseCommitsWaitingAcks(t *testing.T) {
	t.Parallel()
	s := openBolt(t, newBoltPath(t), &Options{AckDelay: never})
	a, _ := enqueue(t, s, "K#s", "a")
	b, _ := enqueue(t, s, "K#s", "b")
	del(t, s, a)
	s = reopen(t, s, nil)
	wantHead(t, s, "K#s", b, "b")
	if n := depth(t, s, "K#s"); n != 1 {
		t.Fatalf("Depth after reopen = %d, want 1", n)
	}
}

// Acknowledged entries take no room: an enqueue into a queue that is full
// only with them drops nothing, and the cap keeps every unacknowledged
// entry.
func TestBoltAckedEntriesDoNotCountTowardsTheCap(t *testing.T) {
	t.Parallel()
	s := openBolt(t, newBoltPath(t), &Options{Options: store.Options{Cap: 3}, AckDelay: never})
	a, _ := enqueue(t, s, "K#s", "a")
	enqueue(t, s, "K#s", "b")
	enqueue(t, s, "K#s", "c")
	del(t, s, a)
	if _, dropped := enqueue(t, s, "K#s", "d"); dropped != 0 {
		t.Fatalf("enqueue beside an acknowledged entry dropped %d, want 0", dropped)
	}
	if n := depth(t, s, "K#s"); n != 3 {
		t.Fatalf("Depth = %d, want 3", n)
	}
	if _, dropped := enqueue(t, s, "K#s", "e"); dropped != 1 {
		t.Fatalf("enqueue into a full queue dropped %d, want 1", dropped)
	}
	_, values := drain(t, s, "K#s")
	if diff := cmp.Diff([]string{"c", "d", "e"}, values); diff != "" {
		t.Fatalf("queue (-want +got):\n%s", diff)
	}
	if err := checkInvariants(s); err != nil {
		t.Fatal(err)
	}
}

// An entry acknowledged while a transaction that drops it for the cap is
// being written is gone after that commit, and its drop is not reported:
// its receiver had it already.
func TestBoltAckDuringACapDropIsNotReportedAsDropped(t *testing.T) {
	t.Parallel()
	s := openBolt(t, newBoltPath(t), &Options{Options: store.Options{Cap: 2}, AckDelay: never})
	a, _ := enqueue(t, s, "K#s", "a")
	enqueue(t, s, "K#s", "b")
	// The writer is idle: nothing is waiting. Record the acknowledgement
	// the way Delete does, then write a transaction that did not see it,
	// as one that began before it would.
	if n, err := s.markAcked(a, "K#s"); err != nil || n != 1 {
		t.Fatalf("markAcked = %d, %v", n, err)
	}
	r := &writeReq{route: "K#s", value: []byte("c"), done: make(chan struct{})}
	if err := s.w.write([]*writeReq{r}, nil); err != nil {
		t.Fatal(err)
	}
	if r.dropped != 0 {
		t.Fatalf("the enqueue reported %d dropped, want 0", r.dropped)
	}
	if n := s.w.ackedLen(); n != 0 {
		t.Fatalf("%d acknowledgements still waiting for an entry that is gone", n)
	}
	if n := depth(t, s, "K#s"); n != 2 {
		t.Fatalf("Depth = %d, want 2", n)
	}
	_, values := drain(t, s, "K#s")
	if diff := cmp.Diff([]string{"b", "c"}, values); diff != "" {
		t.Fatalf("queue (-want +got):\n%s", diff)
	}
	if err := checkInvariants(s); err != nil {
		t.Fatal(err)
	}
}

// An acknowledgement of a key that is not stored waits for nothing and
// costs no commit.
func TestBoltAckOfAnAbsentKeyWaitsForNothing(t *testing.T) {
	t.Parallel()
	s := openBolt(t, newBoltPath(t), &Options{AckDelay: never})
	enqueue(t, s, "K#s", "a")
	del(t, s, store.Key("K#s", 12345))
	if n := s.w.ackedLen(); n != 0 {
		t.Fatalf("%d acknowledgements waiting for a key that is not stored", n)
	}
	if n := depth(t, s, "K#s"); n != 1 {
		t.Fatalf("Depth = %d, want 1", n)
	}
}

// Past the bound on waiting acknowledgements, Delete commits them before it
// returns; below the flush mark the writer commits them without waiting for
// the delay.
func TestBoltAckBounds(t *testing.T) {
	t.Parallel()
	t.Run("bound", func(t *testing.T) {
		t.Parallel()
		s := openBolt(t, newBoltPath(t), &Options{AckDelay: never})
		s.w.maxAcked, s.w.ackFlushAt = 3, 100
		var keys []string
		for i := range 4 {
			k, _ := enqueue(t, s, "K#s", itoa(i))
			keys = append(keys, k)
		}
		for _, k := range keys[:3] {
			del(t, s, k)
		}
		for _, k := range keys[:3] {
			if stored(t, s, k) {
				t.Fatalf("key %q still in the file after the Delete that reached the bound returned", k)
			}
		}
		if n := s.w.ackedLen(); n != 0 {
			t.Fatalf("%d acknowledgements still waiting", n)
		}
		wantHead(t, s, "K#s", keys[3], "3")
	})
	t.Run("flush mark", func(t *testing.T) {
		t.Parallel()
		s := openBolt(t, newBoltPath(t), &Options{AckDelay: never})
		s.w.ackFlushAt = 3
		var keys []string
		for i := range 3 {
			k, _ := enqueue(t, s, "K#s", itoa(i))
			keys = append(keys, k)
		}
		for _, k := range keys {
			del(t, s, k)
		}
		testutil.Eventually(t, 10*time.Second, "the acknowledgements committed", func() bool {
			return s.w.ackedLen() == 0
		})
		for _, k := range keys {
			if stored(t, s, k) {
				t.Fatalf("key %q still in the file", k)
			}
		}
	})
}

// Enqueues that overlap share commits: while one commit is written, the
// enqueues that arrive wait for the next and go into it together. How many
// overlap depends on the scheduler: usually 640 enqueues take about 50
// commits, but on a machine starved of CPU, where the goroutines run
// mostly one after the other, one run took 327. The bound allows for that
// and still fails when commits are not shared, which takes one each.
func TestBoltConcurrentEnqueuesShareCommits(t *testing.T) {
	t.Parallel()
	s := openBolt(t, newBoltPath(t), nil)
	const goroutines, each = 32, 20
	before := txID(t, s)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range each {
				if _, _, err := s.Enqueue("K#s"+itoa(g), []byte(itoa(i))); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	commits := txID(t, s) - before
	if commits >= goroutines*each*3/4 {
		t.Fatalf("%d enqueues from %d goroutines took %d commits; they should share", goroutines*each, goroutines, commits)
	}
	t.Logf("%d enqueues, %d commits", goroutines*each, commits)
	if err := checkInvariants(s); err != nil {
		t.Fatal(err)
	}
}
