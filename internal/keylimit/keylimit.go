package keylimit

import (
	"fmt"
	"hash/maphash"
	"sync"
	"time"
)

// Rate is the refill rate and size of a bucket: one token every Every, at
// most Burst tokens.
type Rate struct {
	Every time.Duration
	Burst int
}

// Default rates. A session sends a message when its model asks, polls
// and acknowledges through other routes, and announces itself every 30 s
// to each relay; several sessions share one key.
var (
	// Sends allows a key 4 sends a second sustained and 120 at once: a
	// burst of replies and task updates from several sessions of a key.
	Sends = Rate{Every: 250 * time.Millisecond, Burst: 120}
	// RosterUpdates allows a key one announcement or unregistration every
	// 2 s sustained (15 sessions at one announcement each 30 s) and 30 at
	// once, when sessions start together.
	RosterUpdates = Rate{Every: 2 * time.Second, Burst: 30}
	// Unsigned allows an address 10 unsigned requests a second sustained
	// and 100 at once: it is coarse, since one address can hold many
	// sessions that do not sign.
	Unsigned = Rate{Every: 100 * time.Millisecond, Burst: 100}
)

// DefaultMaxTracked is the default bound on the clients a limiter tracks.
// At about 100 bytes a client that is a few MiB per limiter.
const DefaultMaxTracked = 65536

// evictScan is how many of the least recently active clients eviction
// looks at to find a full bucket.
const evictScan = 8

// maxShards is the number of shards of a limiter tracking at least
// maxShards*minPerShard clients; smaller limiters have one shard, so
// that their eviction order is exact.
const (
	maxShards   = 16
	minPerShard = 64
)

// Options configure a [Limiter]; the zero value means the defaults.
type Options struct {
	// MaxTracked bounds the clients tracked; 0 means [DefaultMaxTracked].
	MaxTracked int
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Limiter is a set of token buckets, one per client K. It is safe for
// concurrent use.
type Limiter[K comparable] struct {
	every, tolerance int64 // ns; fixed at creation
	now              func() time.Time
	base             time.Time // times are ns since base
	seed             maphash.Seed
	shards           []shard[K]
}

// shard holds some of the buckets, in order of last activity.
type shard[K comparable] struct {
	mu      sync.Mutex
	max     int              // fixed at creation
	buckets map[K]*bucket[K] // guarded by mu
	recent  bucket[K]        // list sentinel: recent.next is the most recently active; guarded by mu
	_       [40]byte         // keeps shards' locks on separate cache lines
}

type bucket[K comparable] struct {
	key        K
	full       int64 // ns since base at which the bucket is full again
	prev, next *bucket[K]
}

// New returns a limiter with rate r. It fails for a rate that allows
// nothing.
func New[K comparable](r Rate, opts *Options) (*Limiter[K], error) {
	if r.Every <= 0 || r.Burst < 1 {
		return nil, fmt.Errorf("keylimit: rate of one token every %v, burst %d: both must be positive", r.Every, r.Burst)
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.MaxTracked <= 0 {
		o.MaxTracked = DefaultMaxTracked
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	n := 1
	if o.MaxTracked >= maxShards*minPerShard {
		n = maxShards
	}
	l := &Limiter[K]{
		every:     int64(r.Every),
		tolerance: int64(r.Every) * int64(r.Burst-1),
		now:       o.Now,
		base:      o.Now(),
		seed:      maphash.MakeSeed(),
		shards:    make([]shard[K], n),
	}
	for i := range l.shards {
		s := &l.shards[i]
		s.max = o.MaxTracked / n
		if i < o.MaxTracked%n {
			s.max++
		}
		s.buckets = make(map[K]*bucket[K])
		s.recent.next, s.recent.prev = &s.recent, &s.recent
	}
	return l, nil
}

// Allow takes a token from k's bucket. It returns true when there was one;
// otherwise false and how long until there is one. A refusal takes
// nothing, so a client that keeps asking is not refused longer for it.
func (l *Limiter[K]) Allow(k K) (bool, time.Duration) {
	now := int64(l.now().Sub(l.base))
	s := &l.shards[0]
	if len(l.shards) > 1 {
		s = &l.shards[maphash.Comparable(l.seed, k)%uint64(len(l.shards))]
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.buckets[k]
	if b == nil {
		if len(s.buckets) >= s.max {
			s.evict(now)
		}
		b = &bucket[K]{key: k, full: now}
		s.buckets[k] = b
	} else {
		b.unlink()
	}
	s.pushFront(b)
	tat := max(b.full, now)
	if wait := tat - now - l.tolerance; wait > 0 {
		return false, time.Duration(wait)
	}
	b.full = tat + l.every
	return true, 0
}

// evict forgets one bucket: of the evictScan least recently active, the
// one that is fullest (the earliest full time), the least recently active
// among equals. The caller holds s.mu.
func (s *shard[K]) evict(now int64) {
	var victim *bucket[K]
	b := s.recent.prev
	for i := 0; i < evictScan && b != &s.recent; i++ {
		if victim == nil || max(b.full, now) < max(victim.full, now) {
			victim = b
		}
		b = b.prev
	}
	if victim == nil {
		return
	}
	victim.unlink()
	delete(s.buckets, victim.key)
}

func (s *shard[K]) pushFront(b *bucket[K]) {
	b.prev, b.next = &s.recent, s.recent.next
	s.recent.next.prev = b
	s.recent.next = b
}

func (b *bucket[K]) unlink() {
	b.prev.next, b.next.prev = b.next, b.prev
	b.prev, b.next = nil, nil
}

// Len returns the number of clients tracked.
func (l *Limiter[K]) Len() int {
	n := 0
	for i := range l.shards {
		s := &l.shards[i]
		s.mu.Lock()
		n += len(s.buckets)
		s.mu.Unlock()
	}
	return n
}

// RetryAfter returns the value of a Retry-After header for a wait of d:
// whole seconds, rounded up, at least 1.
func RetryAfter(d time.Duration) string {
	return fmt.Sprint(max(1, int64((d+time.Second-1)/time.Second)))
}
