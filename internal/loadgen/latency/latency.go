// Package latency collects the latencies of a load run in bounded memory
// and summarizes them as percentiles.
package latency

import (
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"time"
)

// DefaultSampleLimit is how many latencies a [Recorder] keeps when its limit
// is not given: 1 Mi samples, 8 MiB.
const DefaultSampleLimit = 1 << 20

// Recorder collects latencies for percentile reporting. It keeps every sample
// until it holds its limit; after that it keeps a uniform random sample of
// everything seen (reservoir sampling, Vitter's algorithm R), so memory stays
// bounded however long a run lasts while the percentiles stay unbiased.
// Count and Max always cover every sample. A Recorder is safe for concurrent
// use.
type Recorder struct {
	limit int

	mu      sync.Mutex // guards the fields below
	samples []time.Duration
	seen    int64
	max     time.Duration
	rng     *rand.Rand
}

// NewRecorder returns a Recorder that keeps at most limit samples; limit <= 0
// means [DefaultSampleLimit].
func NewRecorder(limit int) *Recorder {
	if limit <= 0 {
		limit = DefaultSampleLimit
	}
	return &Recorder{
		limit: limit,
		// A fixed seed: the sampling needs to be uniform, not secret,
		// and a fixed seed makes runs comparable.
		rng: rand.New(rand.NewPCG(1, 2)),
	}
}

// Add records one latency.
func (r *Recorder) Add(d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seen++
	if d > r.max {
		r.max = d
	}
	if len(r.samples) < r.limit {
		r.samples = append(r.samples, d)
		return
	}
	// Keep the new sample with probability limit/seen, in place of a
	// uniformly chosen old one.
	if j := r.rng.Int64N(r.seen); j < int64(r.limit) {
		r.samples[j] = d
	}
}

// Summary describes the latencies a [Recorder] saw.
type Summary struct {
	Count int64         // every sample added
	Kept  int           // samples the percentiles were computed from
	P50   time.Duration // median
	P99   time.Duration
	P999  time.Duration
	Max   time.Duration // the largest sample added, kept or not
}

// Summary returns the percentiles of the samples so far.
func (r *Recorder) Summary() Summary {
	r.mu.Lock()
	sorted := slices.Clone(r.samples)
	s := Summary{Count: r.seen, Kept: len(r.samples), Max: r.max}
	r.mu.Unlock()

	slices.Sort(sorted)
	s.P50 = percentile(sorted, 0.50)
	s.P99 = percentile(sorted, 0.99)
	s.P999 = percentile(sorted, 0.999)
	return s
}

// percentile returns the nearest-rank p-quantile of sorted (ascending): the
// smallest sample such that at least a fraction p of all samples are less
// than or equal to it. It returns 0 for no samples; p <= 0 gives the
// minimum and p >= 1 the maximum.
func percentile(sorted []time.Duration, p float64) time.Duration {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	// The epsilon keeps binary rounding (0.07*100 is 7.000000000000001) from
	// moving an exact rank up by one.
	rank := int(math.Ceil(p*float64(n) - 1e-9))
	rank = min(max(rank, 1), n)
	return sorted[rank-1]
}
