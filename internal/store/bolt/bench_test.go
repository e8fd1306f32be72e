package bolt

import (
	"encoding/binary"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	bbolt "go.etcd.io/bbolt"

	"github.com/interlink-go/interlink/internal/store"
	"github.com/interlink-go/interlink/internal/store/storetest"
)

// bolt is the backend of the queue benchmarks: a new store in a file of
// the benchmark's own, with commits counted and a full queue filled in
// one transaction.
var benchBackend = storetest.Backend{
	Open: func(tb testing.TB, opts *store.Options) store.Store {
		s, err := Open(filepath.Join(tb.TempDir(), "bus.db"), withBase(opts))
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { s.Close() })
		return s
	},
	Commits: func(tb testing.TB, s store.Store) int { return txID(tb, s.(*Store)) },
	Fill:    fill,
}

// BenchmarkEnqueuePeekDelete is [storetest.BenchEnqueuePeekDelete].
func BenchmarkEnqueuePeekDelete(b *testing.B) {
	b.Run("bolt", func(b *testing.B) { storetest.BenchEnqueuePeekDelete(b, benchBackend) })
}

// BenchmarkEnqueueFullQueue is [storetest.BenchEnqueueFullQueue].
func BenchmarkEnqueueFullQueue(b *testing.B) {
	b.Run("bolt", func(b *testing.B) { storetest.BenchEnqueueFullQueue(b, benchBackend) })
}

// BenchmarkEnqueueParallel is [storetest.BenchEnqueueParallel].
func BenchmarkEnqueueParallel(b *testing.B) {
	b.Run("bolt", func(b *testing.B) { storetest.BenchEnqueueParallel(b, benchBackend) })
}

// fill puts n entries of value into route's queue in one transaction, so
// the fill costs one commit. The writer is idle: nothing else writes
// during the fill.
func fill(tb testing.TB, st store.Store, route string, n int, value []byte) {
	tb.Helper()
	s := st.(*Store)
	err := s.db.Update(func(tx *bbolt.Tx) error {
		for range n {
			_, _, refused, err := s.w.enqueueTx(tx, route, value)
			if err != nil {
				return err
			}
			if refused != nil {
				return refused
			}
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	s.w.apply(nil, nil)
}

// rawBolt opens a bbolt file of b's own with one empty bucket, for the
// floors that measure bbolt without the store.
func rawBolt(b *testing.B) (*bbolt.DB, []byte) {
	db, err := bbolt.Open(filepath.Join(b.TempDir(), "raw.db"), 0o600, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	bucket := []byte("messages")
	if err := db.Update(func(tx *bbolt.Tx) error {
		_, err := tx.CreateBucket(bucket)
		return err
	}); err != nil {
		b.Fatal(err)
	}
	return db, bucket
}

// BenchmarkBoltTwoCommitFloor is raw bbolt doing what a send and an ack cost
// at least: two fsync'd write transactions, a put and then a delete. It is
// the floor the bus's durable sequential send-and-ack rate is compared with.
func BenchmarkBoltTwoCommitFloor(b *testing.B) {
	db, bucket := rawBolt(b)
	var seq uint64
	for b.Loop() {
		seq++
		key := []byte(store.Key("K#s", seq))
		if err := db.Update(func(tx *bbolt.Tx) error {
			return tx.Bucket(bucket).Put(key, storetest.BenchValue)
		}); err != nil {
			b.Fatal(err)
		}
		if err := db.Update(func(tx *bbolt.Tx) error {
			return tx.Bucket(bucket).Delete(key)
		}); err != nil {
			b.Fatal(err)
		}
	}
	storetest.ReportRate(b)
}

// BenchmarkBoltOneCommitBehindHTTP is the ceiling of a durable bus that
// commits once per message: three loopback HTTP requests on a kept
// connection, the first of which makes one fsync'd write transaction in
// its handler, the others nothing. Run it beside
// [BenchmarkBoltTwoCommitFloor]: the ratio of their rates is the most a
// sequential send, receive and acknowledge over HTTP can reach against
// that floor on the machine, since a handler that waits for a commit also
// waits for its threads to wake afterwards (see
// [BenchmarkFileSyncBehindHTTP]).
func BenchmarkBoltOneCommitBehindHTTP(b *testing.B) {
	db, bucket := rawBolt(b)
	var seq uint64 // only the first request's handler uses it, one at a time
	threeRequests(b, func() error {
		seq++
		key := []byte(store.Key("K#s", seq))
		return db.Update(func(tx *bbolt.Tx) error {
			return tx.Bucket(bucket).Put(key, storetest.BenchValue)
		})
	})
}

// BenchmarkThreeRequests is three loopback HTTP requests on a kept
// connection whose handlers do nothing: what HTTP alone costs a round
// trip.
func BenchmarkThreeRequests(b *testing.B) {
	threeRequests(b, func() error { return nil })
}

// BenchmarkFileSync is a 4 KiB write and an fsync of a file, alone.
func BenchmarkFileSync(b *testing.B) {
	sync := syncedWrite(b)
	for b.Loop() {
		if err := sync(); err != nil {
			b.Fatal(err)
		}
	}
	storetest.ReportRate(b)
}

// BenchmarkFileSyncBehindHTTP is [BenchmarkThreeRequests] with the first
// handler doing what [BenchmarkFileSync] does. Where its time per round
// trip is well above the sum of those two, waiting for the disk costs the
// process more than the wait itself: its threads fall idle, and waking
// them for each request that follows is slow (in a virtual machine in
// particular).
func BenchmarkFileSyncBehindHTTP(b *testing.B) {
	threeRequests(b, syncedWrite(b))
}

// syncedWrite returns a function that writes 4 KiB at the start of a file
// of b's own and fsyncs it.
func syncedWrite(b *testing.B) func() error {
	f, err := os.Create(filepath.Join(b.TempDir(), "synced"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { f.Close() })
	page := make([]byte, 4096)
	return func() error {
		if _, err := f.WriteAt(page, 0); err != nil {
			return err
		}
		return f.Sync()
	}
}

// threeRequests runs b's loop as three loopback HTTP requests on a kept
// connection, /commit, /recv and /ack; the handler of /commit calls
// commit and answers 500 if it fails.
func threeRequests(b *testing.B, commit func() error) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.Copy(io.Discard, r.Body); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		if r.URL.Path == "/commit" {
			if err := commit(); err != nil {
				w.WriteHeader(http.StatusInternalServerError)
				return
			}
		}
		w.WriteHeader(http.StatusOK)
	}))
	b.Cleanup(srv.Close)
	client := srv.Client()
	do := func(path string) {
		resp, err := client.Post(srv.URL+path, "application/json", strings.NewReader(`{}`))
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("%s: %s", path, resp.Status)
		}
	}
	for b.Loop() {
		do("/commit")
		do("/recv")
		do("/ack")
	}
	storetest.ReportRate(b)
}

// BenchmarkBoltReopen opens a file of 100,000 entries over 1,000 routes,
// which includes checking the file and rebuilding the per-route counts;
// "check" is the check alone and "bbolt" bbolt's own open and close, the
// floor. Each run costs tens of milliseconds, so it skips iteration counts
// over 200 (such as -benchtime=2000x); run it with -benchtime=20x.
func BenchmarkBoltReopen(b *testing.B) {
	const (
		routes   = 1_000
		perRoute = 100
	)
	path := filepath.Join(b.TempDir(), "bus.db")
	db, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		b.Fatal(err)
	}
	// Interleave routes as a live bus would, in a few large transactions.
	var seq uint64
	for round := range perRoute {
		err := db.Update(func(tx *bbolt.Tx) error {
			msgs, err := tx.CreateBucketIfNotExists(bucketMessages)
			if err != nil {
				return err
			}
			for r := range routes {
				if err := msgs.Put([]byte(store.Key(fmt.Sprintf("K%04d#s", r), seq)), storetest.BenchValue); err != nil {
					return err
				}
				seq++
			}
			meta, err := tx.CreateBucketIfNotExists(bucketMeta)
			if err != nil {
				return err
			}
			return meta.Put(keyNextSeq, binary.BigEndian.AppendUint64(nil, seq))
		})
		if err != nil {
			b.Fatalf("round %d: %v", round, err)
		}
	}
	if err := db.Close(); err != nil {
		b.Fatal(err)
	}
	skipMany := func(b *testing.B) {
		if b.N > 200 {
			b.Skipf("%d reopens would take minutes; use -benchtime=20x", b.N)
		}
	}
	b.Run("open", func(b *testing.B) {
		skipMany(b)
		for range b.N {
			s, err := Open(path, nil)
			if err != nil {
				b.Fatal(err)
			}
			if n, _ := s.Depth("K0000#s"); n != perRoute {
				b.Fatalf("depth %d, want %d", n, perRoute)
			}
			if err := s.Close(); err != nil {
				b.Fatal(err)
			}
		}
		storetest.ReportRate(b)
	})
	b.Run("check", func(b *testing.B) {
		skipMany(b)
		for range b.N {
			if err := checkPath(b, path); err != nil {
				b.Fatal(err)
			}
		}
		storetest.ReportRate(b)
	})
	b.Run("bbolt", func(b *testing.B) {
		skipMany(b)
		for range b.N {
			db, err := bbolt.Open(path, 0o600, nil)
			if err != nil {
				b.Fatal(err)
			}
			if err := db.Close(); err != nil {
				b.Fatal(err)
			}
		}
		storetest.ReportRate(b)
	})
}
