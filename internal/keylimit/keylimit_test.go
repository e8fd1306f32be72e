package keylimit

import (
	"fmt"
	"net/netip"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// clock is a manual clock for tests.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Unix(1700000000, 0)} }

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

func (c *clock) advance(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

func newLimiter[K comparable](t testing.TB, r Rate, maxTracked int, c *clock) *Limiter[K] {
	t.Helper()
	l, err := New[K](r, &Options{MaxTracked: maxTracked, Now: c.now})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestBurstThenRate takes a whole burst at once, is refused with the time
// until the next token, and is allowed exactly then, one token per period.
func TestBurstThenRate(t *testing.T) {
	c := newClock()
	l := newLimiter[string](t, Rate{Every: time.Second, Burst: 3}, 0, c)
	for i := range 3 {
		if ok, _ := l.Allow("a"); !ok {
			t.Fatalf("burst request %d refused", i)
		}
	}
	ok, retry := l.Allow("a")
	if ok || retry != time.Second {
		t.Fatalf("after the burst: ok %v, retry %v; want refused, 1s", ok, retry)
	}
	c.advance(retry - time.Millisecond)
	if ok, retry := l.Allow("a"); ok || retry != time.Millisecond {
		t.Fatalf("just before the token: ok %v, retry %v; want refused, 1ms", ok, retry)
	}
	c.advance(time.Millisecond)
	if ok, _ := l.Allow("a"); !ok {
		t.Fatal("refused when the token is there")
	}
	if ok, _ := l.Allow("a"); ok {
		t.Fatal("allowed two tokens after one period")
	}
	// A long idle time refills to the burst, never beyond.
	c.advance(time.Hour)
	for i := range 3 {
		if ok, _ := l.Allow("a"); !ok {
			t.Fatalf("refilled request %d refused", i)
		}
	}
	if ok, _ := l.Allow("a"); ok {
		t.Fatal("bucket refilled beyond its burst")
	}
}

// TestRefusalTakesNothing keeps asking while refused and is allowed as
// soon as the first refusal said.
func TestRefusalTakesNothing(t *testing.T) {
	c := newClock()
	l := newLimiter[string](t, Rate{Every: time.Second, Burst: 1}, 0, c)
	l.Allow("a")
	_, first := l.Allow("a")
	for range 100 {
		if ok, retry := l.Allow("a"); ok || retry != first {
			t.Fatalf("ok %v retry %v, want refused with %v", ok, retry, first)
		}
	}
	c.advance(first)
	if ok, _ := l.Allow("a"); !ok {
		t.Fatal("refusals postponed the next token")
	}
}

// TestClientsAndLimitersIndependent drains one key and checks that
// another key, and the same key in a second limiter (sends and roster
// updates are two limiters of one type), are untouched.
func TestClientsAndLimitersIndependent(t *testing.T) {
	c := newClock()
	sends := newLimiter[[32]byte](t, Sends, 0, c)
	roster := newLimiter[[32]byte](t, RosterUpdates, 0, c)
	a, b := [32]byte{1}, [32]byte{2}
	for i := 0; ; i++ {
		if ok, _ := sends.Allow(a); !ok {
			if i != Sends.Burst {
				t.Fatalf("key a got %d sends at once, want %d", i, Sends.Burst)
			}
			break
		}
	}
	if ok, _ := sends.Allow(b); !ok {
		t.Error("key b refused a send after key a drained its bucket")
	}
	if ok, _ := roster.Allow(a); !ok {
		t.Error("key a refused a roster update after draining its sends")
	}
}

// TestMemoryBoundedUnderKeyFlood makes up far more keys than the bound,
// in a sharded and an unsharded limiter, and checks the tracked count
// never passes the bound while every new key is served.
func TestMemoryBoundedUnderKeyFlood(t *testing.T) {
	for _, maxTracked := range []int{100, maxShards * minPerShard} {
		t.Run(fmt.Sprint(maxTracked), func(t *testing.T) {
			c := newClock()
			l := newLimiter[int](t, Rate{Every: time.Minute, Burst: 2}, maxTracked, c)
			for k := range 20 * maxTracked {
				if ok, _ := l.Allow(k); !ok {
					t.Fatalf("new key %d refused", k)
				}
				if k%97 == 0 && l.Len() > maxTracked {
					t.Fatalf("tracking %d clients, bound %d", l.Len(), maxTracked)
				}
			}
			if n := l.Len(); n > maxTracked || n < maxTracked-maxShards {
				t.Errorf("tracking %d clients, want at most and about %d", n, maxTracked)
			}
		})
	}
}

// TestEvictsFullBucketFirst fills the limiter with drained buckets and one
// full one that acted more recently than they did; a new client takes the
// full one's place, and the drained clients stay limited.
func TestEvictsFullBucketFirst(t *testing.T) {
	c := newClock()
	l := newLimiter[string](t, Rate{Every: time.Second, Burst: 10}, 4, c)
	for _, k := range []string{"d1", "d2", "d3"} {
		for range 10 {
			l.Allow(k)
		}
	}
	c.advance(time.Second)
	l.Allow("full") // one token taken, refilled a second later
	c.advance(time.Second)
	if ok, _ := l.Allow("new"); !ok {
		t.Fatal("new client refused")
	}
	if n := l.Len(); n != 4 {
		t.Fatalf("tracking %d, want 4", n)
	}
	for _, k := range []string{"d1", "d2", "d3"} {
		// Each refilled two tokens; a forgotten bucket would allow ten.
		n := 0
		for {
			if ok, _ := l.Allow(k); !ok {
				break
			}
			n++
		}
		if n != 2 {
			t.Errorf("%s allowed %d, want 2: its bucket was forgotten", k, n)
		}
	}
}

// TestEvictsFullestWhenNoneFull fills the limiter with drained buckets of
// different debts; a new client is still served, in the place of the one
// closest to full, and the deeper debts are kept.
func TestEvictsFullestWhenNoneFull(t *testing.T) {
	c := newClock()
	l := newLimiter[string](t, Rate{Every: time.Second, Burst: 10}, 3, c)
	for k, n := range map[string]int{"deep": 10, "mid": 8, "shallow": 3} {
		for range n {
			l.Allow(k)
		}
	}
	if ok, _ := l.Allow("new"); !ok {
		t.Fatal("new client refused by a full table of drained buckets")
	}
	if ok, _ := l.Allow("deep"); ok {
		t.Error("the deepest debt was forgotten")
	}
	n := 0
	for {
		if ok, _ := l.Allow("mid"); !ok {
			break
		}
		n++
	}
	if n != 2 {
		t.Errorf("mid allowed %d more, want 2", n)
	}
}

// TestRetryAfterOnVirtualClock runs the limiter on the synctest clock: a
// client that waits exactly the Retry-After it was given is served.
func TestRetryAfterOnVirtualClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, err := New[string](Rate{Every: 300 * time.Millisecond, Burst: 2}, nil)
		if err != nil {
			t.Fatal(err)
		}
		served := 0
		start := time.Now()
		for served < 10 {
			ok, retry := l.Allow("a")
			if ok {
				served++
				continue
			}
			time.Sleep(retry)
		}
		// Two at once, then eight at one per 300 ms.
		if got := time.Since(start); got != 8*300*time.Millisecond {
			t.Errorf("ten requests took %v on the virtual clock, want 2.4s", got)
		}
	})
}

// TestRetryAfterHeader rounds waits up to whole seconds.
func TestRetryAfterHeader(t *testing.T) {
	for d, want := range map[time.Duration]string{
		time.Millisecond: "1", time.Second: "1", 1001 * time.Millisecond: "2", 0: "1", 90 * time.Second: "90",
	} {
		if got := RetryAfter(d); got != want {
			t.Errorf("RetryAfter(%v) = %s, want %s", d, got, want)
		}
	}
}

// TestNewRefusesEmptyRate refuses rates that allow nothing.
func TestNewRefusesEmptyRate(t *testing.T) {
	for _, r := range []Rate{{}, {Every: time.Second}, {Burst: 1}, {Every: -1, Burst: 1}} {
		if _, err := New[int](r, nil); err == nil {
			t.Errorf("rate %+v accepted", r)
		}
	}
}

// TestClient groups addresses into clients: an IPv4 address alone, the
// same address written IPv4-mapped, an IPv6 /64 whatever its host part
// and zone, and nothing else.
func TestClient(t *testing.T) {
	tests := []struct{ remote, want string }{
		{"192.0.2.7:5000", "192.0.2.7/32"},
		{"[::ffff:192.0.2.7]:5000", "192.0.2.7/32"},
		{"[2001:db8:1:2:aaaa::1]:443", "2001:db8:1:2::/64"},
		{"[2001:db8:1:2:ffff:ffff:ffff:ffff]:1", "2001:db8:1:2::/64"},
		{"[fe80::1%eth0]:80", "fe80::/64"},
		{"2001:db8:1:3::9", "2001:db8:1:3::/64"},
	}
	for _, tc := range tests {
		if got := RemoteClient(tc.remote); got.String() != tc.want {
			t.Errorf("RemoteClient(%q) = %v, want %s", tc.remote, got, tc.want)
		}
	}
	if got := RemoteClient("@/tmp/sock"); got != (netip.Prefix{}) {
		t.Errorf("non-IP remote = %v, want the zero prefix", got)
	}
}

// BenchmarkAllow measures Allow from all Ps at once: on many keys spread
// over the shards, and on one hot key that every goroutine shares. The
// floor is one mutex and one map lookup per call on the same keys, the
// least a shared map of clients costs.
func BenchmarkAllow(b *testing.B) {
	keys := func(pb *testing.PB, seed uint64, f func(uint64)) {
		k := seed
		for pb.Next() {
			k = k*6364136223846793005 + 1442695040888963407
			f((k >> 33) % 50000)
		}
	}
	var seeds sync.Mutex
	seed := uint64(0)
	nextSeed := func() uint64 { seeds.Lock(); defer seeds.Unlock(); seed++; return seed }
	b.Run("many-keys", func(b *testing.B) {
		l, _ := New[uint64](Rate{Every: time.Microsecond, Burst: 1000}, nil)
		b.RunParallel(func(pb *testing.PB) {
			keys(pb, nextSeed(), func(k uint64) { l.Allow(k) })
		})
	})
	b.Run("one-key", func(b *testing.B) {
		l, _ := New[uint64](Rate{Every: time.Microsecond, Burst: 1000}, nil)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				l.Allow(7)
			}
		})
	})
	b.Run("floor-mutex-map", func(b *testing.B) {
		var mu sync.Mutex
		m := make(map[uint64]int64)
		b.RunParallel(func(pb *testing.PB) {
			keys(pb, nextSeed(), func(k uint64) { mu.Lock(); m[k]++; mu.Unlock() })
		})
	})
}
