package store

import (
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// BenchmarkMemoryHeapPerCountedByte fills a Memory store to its total byte
// bound and reports the heap it holds for each byte the bound counts
// (heap/counted, 1.00 when the count is exact), with what a bus stores:
// the smallest envelope on a route of its own (the worst case, since the
// route's own bookkeeping has only one entry to share it), small envelopes
// on one route, and large ones. [EntryOverhead] is chosen so that the
// worst case stays at or under 1.
func BenchmarkMemoryHeapPerCountedByte(b *testing.B) {
	const total = 16 << 20
	for _, c := range []struct {
		name   string
		prefix string
		value  int
		routes int
	}{
		// {"payload":0,"ts":1733500000000} on routes of a few bytes,
		// and on routes like those of the load generator.
		{"tiny/short-route-each", "", 32, 1 << 30},
		{"tiny/route-each", "bench-0123456789ab-full-", 32, 1 << 30},
		{"tiny/long-route-each", strings.Repeat("r", 249), 32, 1 << 30},
		{"tiny/routes-1024", "bench-0123456789ab-full-", 32, 1024},
		{"4KiB/routes-64", "bench-0123456789ab-full-", 4 << 10, 64},
		{"1MiB/routes-64", "bench-0123456789ab-full-", 1 << 20, 64},
	} {
		b.Run(c.name, func(b *testing.B) {
			value := make([]byte, c.value)
			var ratio float64
			for b.Loop() {
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				m := NewMemory(&Options{TotalBytes: total})
				for i := 0; ; i++ {
					route := c.prefix + strconv.Itoa(i%c.routes)
					if _, _, err := m.Enqueue(route, value); err != nil {
						break
					}
				}
				runtime.GC()
				runtime.ReadMemStats(&after)
				t, err := m.Totals()
				if err != nil {
					b.Fatal(err)
				}
				ratio = float64(after.HeapAlloc-before.HeapAlloc) / float64(t.Bytes)
				runtime.KeepAlive(m)
			}
			b.ReportMetric(ratio, "heap/counted")
		})
	}
}
