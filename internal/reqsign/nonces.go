package reqsign

import (
	"container/heap"
	"fmt"
	"sync"

	"github.com/interlink-go/interlink/internal/identity"
)

type nonceKey struct {
	key   identity.PublicKey
	nonce [NonceSize]byte
}

type nonceEntry struct {
	k       nonceKey
	expires uint64 // Unix ms after which the request is stale
}

// nonceSet remembers (key, nonce) pairs until their request is stale.
//
// Each key has a share: at most perKey entries, and at most half of what
// the other keys leave free of total. An insert beyond a key's share is
// refused; nothing is evicted before it expires, so no key can make the
// set forget another key's nonces (or its own) while they could still be
// replayed. Entries expire in the order of their expiry (a heap), checked
// on every request against the highest clock the set has seen, so a clock
// that steps back cannot revive a forgotten nonce.
type nonceSet struct {
	perKey, total int // fixed at creation

	mu   sync.Mutex
	seen map[nonceKey]struct{}      // guarded by mu
	held map[identity.PublicKey]int // entries per key; guarded by mu
	exp  expiryHeap                 // the entries of seen; guarded by mu
	high uint64                     // highest now seen; guarded by mu
}

func newNonceSet(perKey, total int) *nonceSet {
	return &nonceSet{perKey: perKey, total: total,
		seen: make(map[nonceKey]struct{}), held: make(map[identity.PublicKey]int)}
}

// advance moves the set's clock to now unless it is already later,
// forgets the entries that expired by it, and returns the clock.
func (s *nonceSet) advance(now uint64) uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.high = max(s.high, now)
	for len(s.exp) > 0 && s.exp[0].expires < s.high {
		e := heap.Pop(&s.exp).(nonceEntry)
		delete(s.seen, e.k)
		if s.held[e.k.key]--; s.held[e.k.key] <= 0 {
			delete(s.held, e.k.key)
		}
	}
	return s.high
}

// insert records the nonce of key, which stays until expires: the
// request's time plus [MaxPast].
func (s *nonceSet) insert(key identity.PublicKey, nonce [NonceSize]byte, expires uint64) error {
	k := nonceKey{key, nonce}
	s.mu.Lock()
	defer s.mu.Unlock()
	if expires < s.high {
		// Fresh by the caller's clock, stale by a later one this set saw.
		return &TimeError{Err: ErrStale, Detail: "behind the latest time the relay saw"}
	}
	if _, ok := s.seen[k]; ok {
		return ErrReplay
	}
	held := s.held[key]
	share := min(s.perKey, (s.total-(len(s.seen)-held))/2)
	if held+1 > share {
		return fmt.Errorf("%w (it holds %d signed requests of the last %v, its share is %d)", ErrShareFull, held, MaxPast, share)
	}
	s.seen[k] = struct{}{}
	s.held[key] = held + 1
	heap.Push(&s.exp, nonceEntry{k, expires})
	return nil
}

func (s *nonceSet) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.seen)
}

// expiryHeap orders entries by expiry, soonest first.
type expiryHeap []nonceEntry

func (h expiryHeap) Len() int           { return len(h) }
func (h expiryHeap) Less(i, j int) bool { return h[i].expires < h[j].expires }
func (h expiryHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *expiryHeap) Push(x any)        { *h = append(*h, x.(nonceEntry)) }
func (h *expiryHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}
