package gate

import (
	"sync"

	"github.com/interlink-go/interlink/internal/identity"
)

// ReplayCap is the default capacity of a [ReplaySet].
const ReplayCap = 4096

type replayKey struct {
	sender identity.PublicKey
	msgID  string
}

// ReplaySet remembers admitted messages by sender and msg_id, so the same
// message arriving twice (retries, several relays) is admitted once. Keying by
// sender means two peers that happen to pick the same id do not collide.
//
// It holds at most its capacity of entries. When full, inserting evicts the
// entry inserted first (first in, first out); a replay hit does not refresh an
// entry. An evicted id is accepted again if it is still fresh, and the set
// lives in memory only: it reduces duplicates, it does not promise
// exactly-once delivery across restarts. It is safe for concurrent use.
type ReplaySet struct {
	mu    sync.Mutex
	cap   int                    // fixed at creation
	seen  map[replayKey]struct{} // guarded by mu
	order []replayKey            // guarded by mu; ring buffer of insertions
	next  int                    // guarded by mu; slot of the oldest entry once full
}

// NewReplaySet returns an empty set holding up to capacity entries; a
// capacity below 1 means [ReplayCap].
func NewReplaySet(capacity int) *ReplaySet {
	if capacity < 1 {
		capacity = ReplayCap
	}
	return &ReplaySet{cap: capacity, seen: make(map[replayKey]struct{})}
}

// Insert records (sender, msgID) and reports whether it was new. It returns
// false, changing nothing, for an entry already present.
func (s *ReplaySet) Insert(sender identity.PublicKey, msgID string) bool {
	k := replayKey{sender, msgID}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.seen[k]; ok {
		return false
	}
	if len(s.order) < s.cap {
		s.order = append(s.order, k)
	} else {
		delete(s.seen, s.order[s.next])
		s.order[s.next] = k
		s.next = (s.next + 1) % s.cap
	}
	s.seen[k] = struct{}{}
	return true
}

// Contains reports whether (sender, msgID) is in the set.
func (s *ReplaySet) Contains(sender identity.PublicKey, msgID string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.seen[replayKey{sender, msgID}]
	return ok
}

// Len returns the number of entries.
func (s *ReplaySet) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.seen)
}
