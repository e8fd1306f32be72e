package storetest

import (
	"fmt"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/interlink-go/interlink/internal/store"
)

// The queue benchmarks, run by each implementation's package under a
// sub-benchmark named after it, so that their names read as
// EnqueuePeekDelete/bolt/serial whichever package runs them.

// BenchValue is about the size of a signed message envelope.
var BenchValue = make([]byte, 512)

// BenchEnqueuePeekDelete measures one send, poll and ack: serially on one
// route, and from 64 goroutines on 64 routes.
func BenchEnqueuePeekDelete(b *testing.B, bk Backend) {
	b.Run("serial", func(b *testing.B) {
		s := bk.Open(b, nil)
		var lat []time.Duration
		commits := bk.commitCounter(b, s)
		for b.Loop() {
			t0 := time.Now()
			roundTrip(b, s, "K#s")
			lat = append(lat, time.Since(t0))
		}
		ReportRate(b)
		ReportLatency(b, lat)
		commits()
	})
	b.Run("parallel", func(b *testing.B) {
		s := bk.Open(b, nil)
		var next atomic.Int64
		commits := bk.commitCounter(b, s)
		b.SetParallelism(max(1, 64/runtime.GOMAXPROCS(0)))
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			route := fmt.Sprintf("K#s%d", next.Add(1)%64)
			for pb.Next() {
				roundTrip(b, s, route)
			}
		})
		ReportRate(b)
		commits()
	})
}

func roundTrip(b *testing.B, s store.Store, route string) {
	if _, _, err := s.Enqueue(route, BenchValue); err != nil {
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

// BenchEnqueueFullQueue compares a send into a full queue (cap 1024, so
// every send drops the oldest entry) with a send into an empty one.
func BenchEnqueueFullQueue(b *testing.B, bk Backend) {
	b.Run("empty", func(b *testing.B) {
		// Every send adds an entry: no total may refuse one.
		s := bk.Open(b, &store.Options{TotalBytes: 1 << 50})
		routes := make([]string, b.N)
		for i := range routes {
			routes[i] = fmt.Sprintf("K#s%08d", i)
		}
		b.ResetTimer()
		for i := range b.N {
			if _, dropped, err := s.Enqueue(routes[i], BenchValue); err != nil || dropped != 0 {
				b.Fatal(dropped, err)
			}
		}
		ReportRate(b)
	})
	b.Run("full", func(b *testing.B) {
		s := bk.Open(b, nil)
		bk.fill(b, s, "K#s", store.DefaultCap)
		for b.Loop() {
			if _, dropped, err := s.Enqueue("K#s", BenchValue); err != nil || dropped != 1 {
				b.Fatal(dropped, err)
			}
		}
		ReportRate(b)
	})
}

// BenchEnqueueParallel measures sends alone from 64 goroutines on 64
// routes, where a durable store merges concurrent sends into shared
// commits.
func BenchEnqueueParallel(b *testing.B, bk Backend) {
	s := bk.Open(b, nil)
	var next atomic.Int64
	commits := bk.commitCounter(b, s)
	b.SetParallelism(max(1, 64/runtime.GOMAXPROCS(0)))
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		route := fmt.Sprintf("K#s%d", next.Add(1)%64)
		for pb.Next() {
			if _, _, err := s.Enqueue(route, BenchValue); err != nil {
				b.Error(err)
				return
			}
		}
	})
	ReportRate(b)
	commits()
}

// fill puts n entries of BenchValue into route's queue, through bk.Fill
// when the backend has a quicker way.
func (bk Backend) fill(b *testing.B, s store.Store, route string, n int) {
	b.Helper()
	if bk.Fill != nil {
		bk.Fill(b, s, route, n, BenchValue)
	} else {
		for range n {
			if _, _, err := s.Enqueue(route, BenchValue); err != nil {
				b.Fatal(err)
			}
		}
	}
	if got, _ := s.Depth(route); got != n {
		b.Fatalf("filled %d entries, depth %d", n, got)
	}
}

// commitCounter returns a function that reports write commits per
// operation since commitCounter was called, for a backend that counts
// them.
func (bk Backend) commitCounter(b *testing.B, s store.Store) func() {
	if bk.Commits == nil {
		return func() {}
	}
	start := bk.Commits(b, s)
	return func() { b.ReportMetric(float64(bk.Commits(b, s)-start)/float64(b.N), "commits/op") }
}

// ReportRate reports the operations per second of b.
func ReportRate(b *testing.B) {
	if s := b.Elapsed().Seconds(); s > 0 {
		b.ReportMetric(float64(b.N)/s, "ops/s")
	}
}

// ReportLatency reports the median and the 99th percentile of lat, in
// microseconds.
func ReportLatency(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	q := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))]) / 1e3 }
	b.ReportMetric(q(0.50), "p50-µs")
	b.ReportMetric(q(0.99), "p99-µs")
}
