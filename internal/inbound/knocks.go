package inbound

import (
	"sync"
	"time"

	"github.com/interlink-go/interlink/internal/identity"
)

// Knock limits. Any key may knock, and keys cost nothing to make, so what a
// knock may cost the receiver is bounded here: per key, across all keys, and
// in how often the operator hears about knocks that were turned away.
const (
	// KnockBurstPerKey knocks from one key are taken at once; after that,
	// one more every KnockEveryPerKey. A requester that really wants to
	// pair knocks once and repeats only after a restart or a long silence.
	KnockBurstPerKey = 3
	KnockEveryPerKey = 20 * time.Second
	// KnockBurst knocks from all keys together are taken at once; after
	// that, one more every KnockEvery. Each knock taken costs a write of
	// the pairing file and, for a new key, one notice.
	KnockBurst = 100
	KnockEvery = 2 * time.Second
	// KnockKeys is the most keys whose knock rate is remembered. Past it,
	// the keys that have been quiet long enough to be back at the full
	// burst are forgotten, and if that frees nothing, all of them: the
	// limit across all keys still holds.
	KnockKeys = 4096
	// DroppedNoticeDelay is how long knocks turned away are counted before
	// the operator is told, so that a burst makes one notice, not one per
	// knock.
	DroppedNoticeDelay = 5 * time.Second
	// DroppedNoticeEvery is the least time between two such notices, so a
	// flood that goes on wakes the model at most this often.
	DroppedNoticeEvery = 15 * time.Minute
)

// KnockOptions holds optional settings of [NewKnocks]. A nil *KnockOptions
// means defaults.
type KnockOptions struct {
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Knocks rate-limits pairing requests (knocks) and counts those turned
// away. One Knocks serves every relay loop of a process, so a knock counts
// once whichever relay carried it. It is safe for concurrent use.
//
// Limits are token buckets: per key ([KnockBurstPerKey],
// [KnockEveryPerKey]) and for all keys together ([KnockBurst],
// [KnockEvery]). A knock over the per-key limit is a repeat of a request the
// key made moments ago and is dropped silently. A knock over the limit for
// all keys, or one the pairing store refused because its list of pending
// requests is full, is counted as dropped; the count is handed out for one
// notice to the operator at most every [DroppedNoticeEvery], the first
// [DroppedNoticeDelay] after the first drop.
type Knocks struct {
	now func() time.Time

	mu     sync.Mutex
	perKey map[identity.PublicKey]*bucket // guarded by mu; at most KnockKeys entries
	all    bucket                         // guarded by mu
	drops  Dropped                        // guarded by mu: not yet reported
	first  time.Time                      // guarded by mu: first drop not yet reported
	last   time.Time                      // guarded by mu: when the last count was handed out
}

// Dropped counts knocks that were turned away without being recorded.
type Dropped struct {
	// Full counts knocks refused because the list of pending requests was
	// full.
	Full int
	// Limited counts knocks over the limit for all keys together.
	Limited int
}

// Total returns the number of dropped knocks.
func (d Dropped) Total() int { return d.Full + d.Limited }

// NewKnocks returns a limiter with full buckets.
func NewKnocks(opts *KnockOptions) *Knocks {
	k := &Knocks{now: time.Now, perKey: make(map[identity.PublicKey]*bucket)}
	if opts != nil && opts.Now != nil {
		k.now = opts.Now
	}
	return k
}

// verdict is what [Knocks.allow] decided.
type verdict int

const (
	knockAllowed verdict = iota
	knockKeyLimited
	knockLimited
)

// allow decides whether a knock from key may be processed now. A knock over
// the limit for all keys is counted as dropped.
func (k *Knocks) allow(key identity.PublicKey) verdict {
	k.mu.Lock()
	defer k.mu.Unlock()
	now := k.now()
	b := k.perKey[key]
	if b == nil {
		if len(k.perKey) >= KnockKeys {
			k.forget(now)
		}
		b = &bucket{}
		k.perKey[key] = b
	}
	if !b.take(now, KnockBurstPerKey, KnockEveryPerKey) {
		return knockKeyLimited
	}
	if !k.all.take(now, KnockBurst, KnockEvery) {
		k.dropLocked(now, Dropped{Limited: 1})
		return knockLimited
	}
	return knockAllowed
}

// forget removes the per-key buckets that are full again at now, and all of
// them if that frees nothing. The caller holds mu.
func (k *Knocks) forget(now time.Time) {
	for key, b := range k.perKey {
		if b.full(now, KnockBurstPerKey, KnockEveryPerKey) {
			delete(k.perKey, key)
		}
	}
	if len(k.perKey) >= KnockKeys {
		clear(k.perKey)
	}
}

// full counts one knock refused because the list of pending requests is
// full.
func (k *Knocks) full() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.dropLocked(k.now(), Dropped{Full: 1})
}

func (k *Knocks) dropLocked(now time.Time, d Dropped) {
	if k.drops.Total() == 0 {
		k.first = now
	}
	k.drops.Full += d.Full
	k.drops.Limited += d.Limited
}

// due returns the knocks dropped since the count was last handed out, and
// true, when the operator is to be told now: some were dropped, the first
// of them at least [DroppedNoticeDelay] ago, and no count was handed out in
// the last [DroppedNoticeEvery]. The count starts again from zero.
func (k *Knocks) due() (Dropped, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	now := k.now()
	if k.drops.Total() == 0 || now.Sub(k.first) < DroppedNoticeDelay ||
		(!k.last.IsZero() && now.Sub(k.last) < DroppedNoticeEvery) {
		return Dropped{}, false
	}
	d := k.drops
	k.drops, k.last = Dropped{}, now
	return d, true
}

// bucket is a token bucket. The zero bucket is full.
type bucket struct {
	tokens float64
	at     time.Time // when tokens was last brought up to date; zero: full
}

// take refills b up to now and takes one token if there is one.
func (b *bucket) take(now time.Time, burst int, every time.Duration) bool {
	b.refill(now, burst, every)
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// full reports whether b holds burst tokens at now.
func (b *bucket) full(now time.Time, burst int, every time.Duration) bool {
	c := *b
	c.refill(now, burst, every)
	return c.tokens >= float64(burst)
}

// refill adds the tokens earned since b.at. A clock that went back earns
// nothing.
func (b *bucket) refill(now time.Time, burst int, every time.Duration) {
	switch {
	case b.at.IsZero():
		b.tokens = float64(burst)
	case now.After(b.at):
		b.tokens = min(float64(burst), b.tokens+float64(now.Sub(b.at))/float64(every))
	default:
		return
	}
	b.at = now
}
