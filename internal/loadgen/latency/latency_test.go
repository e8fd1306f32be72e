package latency

import (
	"slices"
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	ms := func(vs ...int) []time.Duration {
		out := make([]time.Duration, len(vs))
		for i, v := range vs {
			out[i] = time.Duration(v) * time.Millisecond
		}
		return out
	}
	hundred := make([]int, 100)
	for i := range hundred {
		hundred[i] = i + 1
	}
	thousand := make([]int, 1000)
	for i := range thousand {
		thousand[i] = i + 1
	}
	tests := []struct {
		name   string
		sorted []time.Duration
		p      float64
		want   time.Duration
	}{
		{"empty", nil, 0.5, 0},
		{"one sample p50", ms(7), 0.5, 7 * time.Millisecond},
		{"one sample p999", ms(7), 0.999, 7 * time.Millisecond},
		{"two samples p50 is the lower", ms(1, 2), 0.5, 1 * time.Millisecond},
		{"two samples p51 is the upper", ms(1, 2), 0.51, 2 * time.Millisecond},
		{"odd count median", ms(1, 2, 3, 4, 5), 0.5, 3 * time.Millisecond},
		{"1..100 p50", ms(hundred...), 0.50, 50 * time.Millisecond},
		{"1..100 p99", ms(hundred...), 0.99, 99 * time.Millisecond},
		{"1..100 p07 is not pushed up by rounding", ms(hundred...), 0.07, 7 * time.Millisecond},
		{"1..100 p999 is the maximum", ms(hundred...), 0.999, 100 * time.Millisecond},
		{"1..1000 p999", ms(thousand...), 0.999, 999 * time.Millisecond},
		{"1..1000 p99", ms(thousand...), 0.99, 990 * time.Millisecond},
		{"p0 is the minimum", ms(3, 4, 5), 0, 3 * time.Millisecond},
		{"p1 is the maximum", ms(3, 4, 5), 1, 5 * time.Millisecond},
		{"above 1 is the maximum", ms(3, 4, 5), 2, 5 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := percentile(tt.sorted, tt.p); got != tt.want {
				t.Errorf("percentile(%v) = %v, want %v", tt.p, got, tt.want)
			}
		})
	}
}

func TestRecorderKeepsEverythingUpToItsLimit(t *testing.T) {
	r := NewRecorder(1000)
	// Added in reverse, so the summary must sort.
	for i := 1000; i >= 1; i-- {
		r.Add(time.Duration(i) * time.Microsecond)
	}
	s := r.Summary()
	want := Summary{Count: 1000, Kept: 1000, P50: 500 * time.Microsecond, P99: 990 * time.Microsecond,
		P999: 999 * time.Microsecond, Max: 1000 * time.Microsecond}
	if s != want {
		t.Errorf("Summary() = %+v, want %+v", s, want)
	}
}

func TestRecorderSamplesPastItsLimit(t *testing.T) {
	const limit, n = 1000, 100_000
	r := NewRecorder(limit)
	for i := 1; i <= n; i++ {
		r.Add(time.Duration(i))
	}
	s := r.Summary()
	if s.Count != n || s.Kept != limit || s.Max != n {
		t.Fatalf("Count, Kept, Max = %d, %d, %d; want %d, %d, %d", s.Count, s.Kept, s.Max, n, limit, n)
	}
	// A uniform sample of 1..n has its median near n/2; the bound is
	// loose enough never to fail by chance with the fixed seed.
	if s.P50 < n*4/10 || s.P50 > n*6/10 {
		t.Errorf("sampled median %d is far from %d", s.P50, n/2)
	}
	r.mu.Lock()
	kept := slices.Clone(r.samples)
	r.mu.Unlock()
	if len(kept) != limit {
		t.Errorf("recorder holds %d samples, want %d", len(kept), limit)
	}
}
