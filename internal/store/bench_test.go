package store

import (
	"encoding/binary"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	bolt "go.etcd.io/bbolt"

	"github.com/interlink-go/interlink/internal/store/natstest"
)

// benchValue is about the size of a signed message envelope.
var benchValue = make([]byte, 512)

// benchStores lists the stores the queue benchmarks run against. "nats" runs
// a JetStream server in the process, on loopback, with a new stream for
// each benchmark.
func benchStores(b *testing.B, f func(b *testing.B, open func(opts *Options) Store)) {
	b.Run("memory", func(b *testing.B) {
		f(b, func(opts *Options) Store {
			m := NewMemory(opts)
			b.Cleanup(func() { m.Close() })
			return m
		})
	})
	b.Run("bolt", func(b *testing.B) {
		f(b, func(opts *Options) Store {
			s, err := OpenBolt(filepath.Join(b.TempDir(), "bus.db"), opts)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { s.Close() })
			return s
		})
	})
	b.Run("nats", func(b *testing.B) {
		srv := natstest.Start(b, nil)
		f(b, func(opts *Options) Store {
			no := &NATSOptions{Stream: fmt.Sprintf("B%d", streamSeq.Add(1))}
			if opts != nil {
				no.Options = *opts
			}
			s, err := OpenNATS(srv.URL(), no)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { s.Close() })
			return s
		})
	})
}

// BenchmarkEnqueuePeekDelete measures one send, poll and ack: serially on one
// route, and from 64 goroutines on 64 routes.
func BenchmarkEnqueuePeekDelete(b *testing.B) {
	benchStores(b, func(b *testing.B, open func(*Options) Store) {
		b.Run("serial", func(b *testing.B) {
			s := open(nil)
			var lat []time.Duration
			commits := commitCounter(b, s)
			for b.Loop() {
				t0 := time.Now()
				roundTrip(b, s, "K#s")
				lat = append(lat, time.Since(t0))
			}
			reportRate(b)
			reportLatency(b, lat)
			commits()
		})
		b.Run("parallel", func(b *testing.B) {
			s := open(nil)
			var next atomic.Int64
			commits := commitCounter(b, s)
			b.SetParallelism(max(1, 64/runtime.GOMAXPROCS(0)))
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				route := fmt.Sprintf("K#s%d", next.Add(1)%64)
				for pb.Next() {
					roundTrip(b, s, route)
				}
			})
			reportRate(b)
			commits()
		})
	})
}

func roundTrip(b *testing.B, s Store, route string) {
	if _, _, err := s.Enqueue(route, benchValue); err != nil {
		b.Error(err)
		return
	}
	e, ok, err := s.Peek(route)
	if err != nil || !ok {
		b.Errorf("Peek: %v, %v", ok, err)
		return
	}
	if err := s.Delete(e.Key); err != nil {
		b.Error(err)
	}
}

// BenchmarkEnqueueFullQueue compares a send into a full queue (cap 1024, so
// every send drops the oldest entry) with a send into an empty one.
func BenchmarkEnqueueFullQueue(b *testing.B) {
	benchStores(b, func(b *testing.B, open func(*Options) Store) {
		b.Run("empty", func(b *testing.B) {
			// Every send adds an entry: no total may refuse one.
			s := open(&Options{TotalBytes: 1 << 50})
			routes := make([]string, b.N)
			for i := range routes {
				routes[i] = fmt.Sprintf("K#s%08d", i)
			}
			b.ResetTimer()
			for i := range b.N {
				if _, dropped, err := s.Enqueue(routes[i], benchValue); err != nil || dropped != 0 {
					b.Fatal(dropped, err)
				}
			}
			reportRate(b)
		})
		b.Run("full", func(b *testing.B) {
			s := open(nil)
			fill(b, s, "K#s", DefaultCap)
			for b.Loop() {
				if _, dropped, err := s.Enqueue("K#s", benchValue); err != nil || dropped != 1 {
					b.Fatal(dropped, err)
				}
			}
			reportRate(b)
		})
	})
}

// fill puts n entries into route's queue. A bolt store is filled in one
// transaction, so the fill costs one commit.
func fill(b *testing.B, s Store, route string, n int) {
	b.Helper()
	bs, ok := s.(*Bolt)
	if !ok {
		for range n {
			if _, _, err := s.Enqueue(route, benchValue); err != nil {
				b.Fatal(err)
			}
		}
		return
	}
	// The writer is idle: nothing else writes during the fill.
	err := bs.db.Update(func(tx *bolt.Tx) error {
		for range n {
			_, _, refused, err := bs.enqueueTx(tx, route, benchValue)
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
		b.Fatal(err)
	}
	bs.apply(nil, nil)
	if got, _ := s.Depth(route); got != n {
		b.Fatalf("filled %d entries, depth %d", n, got)
	}
}

// rawBolt opens a bbolt file of b's own with one empty bucket, for the
// floors that measure bbolt without the store.
func rawBolt(b *testing.B) (*bolt.DB, []byte) {
	db, err := bolt.Open(filepath.Join(b.TempDir(), "raw.db"), 0o600, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	bucket := []byte("messages")
	if err := db.Update(func(tx *bolt.Tx) error {
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
		key := []byte(Key("K#s", seq))
		if err := db.Update(func(tx *bolt.Tx) error {
			return tx.Bucket(bucket).Put(key, benchValue)
		}); err != nil {
			b.Fatal(err)
		}
		if err := db.Update(func(tx *bolt.Tx) error {
			return tx.Bucket(bucket).Delete(key)
		}); err != nil {
			b.Fatal(err)
		}
	}
	reportRate(b)
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
		key := []byte(Key("K#s", seq))
		return db.Update(func(tx *bolt.Tx) error {
			return tx.Bucket(bucket).Put(key, benchValue)
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
	reportRate(b)
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
	reportRate(b)
}

// BenchmarkNATSThreeRequestFloor is raw JetStream doing the least a send,
// a poll and an ack cost: one request each (publish, get the first message
// of the subject, delete by sequence), with none of the store's checks. It
// is the floor the JetStream store's round trip is compared with.
func BenchmarkNATSThreeRequestFloor(b *testing.B) {
	srv := natstest.Start(b, nil)
	nc, err := nats.Connect(srv.URL())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		b.Fatal(err)
	}
	ctx := b.Context()
	stream, err := js.CreateStream(ctx, streamConfig("FLOOR", DefaultCap, 1, -1, 0))
	if err != nil {
		b.Fatal(err)
	}
	subject := NATSSubject("FLOOR", "K#s")
	var lat []time.Duration
	for b.Loop() {
		t0 := time.Now()
		if _, err := js.Publish(ctx, subject, benchValue); err != nil {
			b.Fatal(err)
		}
		msg, err := stream.GetMsg(ctx, 0, jetstream.WithGetMsgSubject(subject))
		if err != nil {
			b.Fatal(err)
		}
		if err := stream.DeleteMsg(ctx, msg.Sequence); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	reportRate(b)
	reportLatency(b, lat)
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
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		b.Fatal(err)
	}
	// Interleave routes as a live bus would, in a few large transactions.
	var seq uint64
	for round := range perRoute {
		err := db.Update(func(tx *bolt.Tx) error {
			msgs, err := tx.CreateBucketIfNotExists(bucketMessages)
			if err != nil {
				return err
			}
			for r := range routes {
				if err := msgs.Put([]byte(Key(fmt.Sprintf("K%04d#s", r), seq)), benchValue); err != nil {
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
			s, err := OpenBolt(path, nil)
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
		reportRate(b)
	})
	b.Run("check", func(b *testing.B) {
		skipMany(b)
		for range b.N {
			if err := checkPath(b, path); err != nil {
				b.Fatal(err)
			}
		}
		reportRate(b)
	})
	b.Run("bbolt", func(b *testing.B) {
		skipMany(b)
		for range b.N {
			db, err := bolt.Open(path, 0o600, nil)
			if err != nil {
				b.Fatal(err)
			}
			if err := db.Close(); err != nil {
				b.Fatal(err)
			}
		}
		reportRate(b)
	})
}

func reportRate(b *testing.B) {
	if s := b.Elapsed().Seconds(); s > 0 {
		b.ReportMetric(float64(b.N)/s, "ops/s")
	}
}

func reportLatency(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	q := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))]) / 1e3 }
	b.ReportMetric(q(0.50), "p50-µs")
	b.ReportMetric(q(0.99), "p99-µs")
}

// commitCounter returns a function that reports write commits per operation
// for a bolt store since commitCounter was called.
func commitCounter(b *testing.B, s Store) func() {
	bs, ok := s.(*Bolt)
	if !ok {
		return func() {}
	}
	txid := func() int {
		tx, err := bs.db.Begin(false)
		if err != nil {
			b.Fatal(err)
		}
		defer tx.Rollback()
		return tx.ID()
	}
	start := txid()
	return func() { b.ReportMetric(float64(txid()-start)/float64(b.N), "commits/op") }
}

// BenchmarkEnqueueParallel measures sends alone from 64 goroutines on 64
// routes, where a durable store merges concurrent sends into shared commits.
func BenchmarkEnqueueParallel(b *testing.B) {
	benchStores(b, func(b *testing.B, open func(*Options) Store) {
		s := open(nil)
		var next atomic.Int64
		commits := commitCounter(b, s)
		b.SetParallelism(max(1, 64/runtime.GOMAXPROCS(0)))
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			route := fmt.Sprintf("K#s%d", next.Add(1)%64)
			for pb.Next() {
				if _, _, err := s.Enqueue(route, benchValue); err != nil {
					b.Error(err)
					return
				}
			}
		})
		reportRate(b)
		commits()
	})
}
