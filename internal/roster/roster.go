package roster

import (
	"iter"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/interlink-go/interlink/internal/protocol"
	"github.com/interlink-go/interlink/internal/wire"
)

// Bounds of a roster.
const (
	// Cap is the most entries a roster holds. When it is full, an
	// announcement for a new key takes the place of the entry refreshed
	// longest ago. It is set above what [MaxBytes] holds of the agent's
	// usual announcements (about 490 bytes listed, so some 12,800), so
	// for a roster of real sessions the byte bound is the one that binds;
	// this one bounds the bookkeeping of tiny entries.
	Cap = 16384
	// MaxBytes bounds a whole /roster response, ages included. It is kept
	// well under the 8 MiB an interlink agent reads from /roster, so that
	// however the roster is filled, agents can still read it. When a new
	// announcement would push the roster past it, entries refreshed
	// longest ago make room, as they do for [Cap]. Announcements are at
	// most [wire.MaxAnnounceBytes], which keeps one client's entries from
	// filling it with a handful of announcements.
	MaxBytes = 6 << 20
	// Retention is how long an entry lives after its last announcement.
	Retention = protocol.RosterRetention
)

// retainMs is [Retention] in milliseconds.
const retainMs = int64(Retention / time.Millisecond)

// budget is what the entries of one /roster answer may cost together,
// within its frame ([wire.RosterOpen]).
const budget = MaxBytes - len(wire.RosterOpen) - len(wire.RosterClose)

// Roster is the presence list: roster key → the last announcement for it
// and when it arrived. It lives in memory only; agents refill it with their
// next heartbeat after a restart. The zero value is an empty roster, safe
// for concurrent use.
//
// Bounds: at most [Cap] entries, whose listing costs at most [MaxBytes]
// however old they are. An announcement that would break either bound
// first removes the entries refreshed longest ago, as many as it takes; an
// existing key that refreshes replaces its own entry. So a full roster
// never shuts out a newcomer, and a session that keeps announcing stays
// listed unless others announce faster than it does.
//
// Entries older than [Retention] are hidden from every listing and pruned
// by the next announcement. Entries sit in a list in the order they were
// last refreshed, so pruning and eviction both take from its head. If the
// wall clock goes back, an entry behind the head may expire first; it is
// hidden at once and pruned when it reaches the head or is evicted.
//
// Listings are served from a snapshot, sorted by roster key, that is made
// once after each change and shared by every listing until the next change
// ([Roster.Snapshot]).
type Roster struct {
	mu      sync.Mutex
	entries map[string]*Entry // guarded by mu
	// head is the entry refreshed longest ago, tail the latest; the list
	// links every entry through prev and next. Guarded by mu.
	head, tail *Entry
	bytes      int       // sum of cost() over entries; guarded by mu
	snap       *Snapshot // nil after a change; guarded by mu
}

// Entry is one announcement, as it was received. An entry never changes:
// a refresh makes a new one.
type Entry struct {
	key        string
	fields     []byte // see [wire.Announce]
	at         int64  // receipt time, Unix ms
	rev        uint64 // its revision in a shared roster's log; 0 otherwise
	fsum       uint64 // fieldsSum(fields), set by put
	prev, next *Entry // guarded by the roster's mu
	// priv is what a bus that requires signatures serves of the entry to
	// each requester, derived the first time a listing needs it; see
	// privacyOf.
	priv atomic.Pointer[entryPrivacy]
}

// Key returns the entry's roster key: its pubkey, or its pubkey, "#" and
// its session id.
func (e *Entry) Key() string { return e.key }

// Fields returns the members of the announcement's JSON object as it was
// sent, without the braces ([wire.Announce]). The caller must not change
// them.
func (e *Entry) Fields() []byte { return e.fields }

// Age returns how old the entry is at now (Unix ms); a receipt time in the
// future (the clock went back) gives 0.
func (e *Entry) Age(now int64) time.Duration {
	return time.Duration(age(e.at, now)) * time.Millisecond
}

// cost returns the most the entry adds to a /roster response.
func (e *Entry) cost() int { return len(e.fields) + wire.RosterEntryOverhead }

// age returns how old an entry received at is at now, in milliseconds; a
// receipt time in the future (the clock went back) gives 0.
func age(at, now int64) int64 {
	return max(now-at, 0)
}

// Upsert prunes expired entries and stores a, received at now (Unix ms),
// as the entry of its key, removing the entries refreshed longest ago
// while the roster would otherwise break a bound. It returns how many live
// entries gave way, and false if a is too large to list at all (which
// [wire.MaxAnnounceBytes] rules out).
func (ro *Roster) Upsert(a wire.Announce, now int64) (evicted int, stored bool) {
	gone, stored := ro.put(&Entry{key: a.Key, fields: a.Fields, at: now}, now)
	return len(gone), stored
}

// put is [Roster.Upsert] for an entry made by the caller, pruning what has
// expired at now. It returns the live entries that gave way.
func (ro *Roster) put(e *Entry, now int64) (evicted []*Entry, stored bool) {
	if e.cost() > budget {
		return nil, false
	}
	e.fsum = fieldsSum(e.fields)
	ro.mu.Lock()
	defer ro.mu.Unlock()
	if ro.entries == nil {
		ro.entries = make(map[string]*Entry)
	}
	for ro.head != nil && age(ro.head.at, now) >= retainMs {
		ro.unlink(ro.head)
	}
	if old := ro.entries[e.key]; old != nil {
		ro.unlink(old)
	}
	for len(ro.entries) >= Cap || ro.bytes+e.cost() > budget {
		evicted = append(evicted, ro.head)
		ro.unlink(ro.head)
	}
	ro.entries[e.key] = e
	e.prev = ro.tail
	if ro.tail != nil {
		ro.tail.next = e
	} else {
		ro.head = e
	}
	ro.tail = e
	ro.bytes += e.cost()
	ro.snap = nil
	return evicted, true
}

// unlink removes e from the map and the list. ro.mu must be held.
func (ro *Roster) unlink(e *Entry) {
	delete(ro.entries, e.key)
	if e.prev != nil {
		e.prev.next = e.next
	} else {
		ro.head = e.next
	}
	if e.next != nil {
		e.next.prev = e.prev
	} else {
		ro.tail = e.prev
	}
	e.prev, e.next = nil, nil
	ro.bytes -= e.cost()
	ro.snap = nil
}

// Remove deletes the entry for key, if any.
func (ro *Roster) Remove(key string) {
	ro.mu.Lock()
	defer ro.mu.Unlock()
	if e := ro.entries[key]; e != nil {
		ro.unlink(e)
	}
}

// Has reports whether key has an entry, expired or not.
func (ro *Roster) Has(key string) bool {
	ro.mu.Lock()
	defer ro.mu.Unlock()
	return ro.entries[key] != nil
}

// Len returns the number of stored entries, expired ones included.
func (ro *Roster) Len() int {
	ro.mu.Lock()
	defer ro.mu.Unlock()
	return len(ro.entries)
}

// Size returns what the stored entries may cost in a listing, expired ones
// included.
func (ro *Roster) Size() int {
	ro.mu.Lock()
	defer ro.mu.Unlock()
	return ro.bytes
}

// Snapshot is every stored entry at one moment, sorted by roster key. It
// is never changed once made, so listings use it without the roster's
// lock.
type Snapshot struct {
	items []item
	// oldest is the earliest receipt time among items (0 without items),
	// and tag the entity tag of a listing of every item, valid while none
	// of them has expired; see [Snapshot.Listing].
	oldest int64
	tag    string
}

// item is one entry of a snapshot or a listing, with the fields a listing
// serves of it.
type item struct {
	fields []byte
	sum    uint64 // fieldsSum(fields)
	at     int64
	entry  *Entry
}

// Snapshot returns the snapshot of the current entries, making it if the
// roster changed since the last one.
func (ro *Roster) Snapshot() *Snapshot {
	ro.mu.Lock()
	defer ro.mu.Unlock()
	if ro.snap != nil {
		return ro.snap
	}
	keyed := make([]*Entry, 0, len(ro.entries))
	for _, e := range ro.entries {
		keyed = append(keyed, e)
	}
	slices.SortFunc(keyed, func(a, b *Entry) int { return strings.Compare(a.key, b.key) })
	snap := &Snapshot{items: make([]item, len(keyed))}
	for i, e := range keyed {
		snap.items[i] = item{fields: e.fields, sum: e.fsum, at: e.at, entry: e}
		if i == 0 || e.at < snap.oldest {
			snap.oldest = e.at
		}
	}
	snap.tag = listingTag(snap.items)
	ro.snap = snap
	return snap
}

// All returns the snapshot's entries in roster key order, expired ones
// included.
func (snap *Snapshot) All() iter.Seq[*Entry] {
	return func(yield func(*Entry) bool) {
		for _, it := range snap.items {
			if !yield(it.entry) {
				return
			}
		}
	}
}

// Len returns the number of entries in the snapshot, expired ones
// included.
func (snap *Snapshot) Len() int { return len(snap.items) }
