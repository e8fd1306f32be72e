package gate

import (
	"sync"

	"github.com/interlink-go/interlink/internal/identity"
)

// ReplayCap is the default capacity of one share of a [ReplaySet].
const ReplayCap = 4096

type replayKey struct {
	sender identity.PublicKey
	msgID  string
}

// strangers names the one share that every key outside the peer list and
// the own identity uses (see [Gate.Decide]). The zero key never verifies a
// signature, so it is no sender's own share.
var strangers identity.PublicKey

// ReplaySet remembers admitted messages by sender and msg_id, so the same
// message arriving twice (retries, several relays) is admitted once. Keying by
// sender means two peers that happen to pick the same id do not collide.
//
// Entries live in shares, and a share holds at most the set's capacity of
// them. When a share is full, inserting into it evicts the entry inserted
// into that share first (first in, first out); a replay hit does not refresh
// an entry. Nothing inserted into one share ever evicts an entry of another,
// so a sender that floods the set pushes out only what its own share holds.
// The gate gives every peer and the own identity a share of its own and puts
// every other key into one share for strangers, so memory stays bounded by
// the peer list, however many keys strangers make up.
//
// An evicted id is accepted again if it is still fresh, and the set lives in
// memory only: it reduces duplicates, it does not promise exactly-once
// delivery across restarts. The mailbox keeps what was delivered for the
// whole freshness window. It is safe for concurrent use.
type ReplaySet struct {
	mu     sync.Mutex
	cap    int                                // fixed at creation
	seen   map[replayKey]struct{}             // guarded by mu
	shares map[identity.PublicKey]*replayFIFO // guarded by mu
}

// replayFIFO is the insertion order of one share: a ring buffer.
type replayFIFO struct {
	order []replayKey
	next  int // slot of the oldest entry once full
}

// NewReplaySet returns an empty set whose shares hold up to capacity entries
// each; a capacity below 1 means [ReplayCap].
func NewReplaySet(capacity int) *ReplaySet {
	if capacity < 1 {
		capacity = ReplayCap
	}
	return &ReplaySet{cap: capacity, seen: make(map[replayKey]struct{}),
		shares: make(map[identity.PublicKey]*replayFIFO)}
}

// Insert records (sender, msgID) in the share of sender and reports whether
// it was new. It returns false, changing nothing, for an entry already
// present.
func (s *ReplaySet) Insert(sender identity.PublicKey, msgID string) bool {
	return s.InsertInto(sender, sender, msgID)
}

// InsertInto records (sender, msgID) in the share named share and reports
// whether it was new: false, changing nothing, for an entry already present
// in any share. A full share first forgets its oldest entry.
func (s *ReplaySet) InsertInto(share, sender identity.PublicKey, msgID string) bool {
	k := replayKey{sender, msgID}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.seen[k]; ok {
		return false
	}
	q := s.shares[share]
	if q == nil {
		q = &replayFIFO{}
		s.shares[share] = q
	}
	if len(q.order) < s.cap {
		q.order = append(q.order, k)
	} else {
		delete(s.seen, q.order[q.next])
		q.order[q.next] = k
		q.next = (q.next + 1) % s.cap
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

// Len returns the number of entries, in all shares.
func (s *ReplaySet) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.seen)
}
