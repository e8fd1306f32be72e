package bus

import (
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/wire"
)

// rosterRetainMs is [RosterRetention] in milliseconds.
const rosterRetainMs = int64(RosterRetention / time.Millisecond)

// rosterBudget is what the entries of one /roster answer may cost
// together, within its frame ([wire.RosterOpen]).
const rosterBudget = MaxRosterBytes - len(wire.RosterOpen) - len(wire.RosterClose)

// entryClose ends one entry of a listing.
var entryClose = []byte(wire.RosterEntryClose)

// roster is the presence list: roster key → the last announcement for it
// and when it arrived. It lives in memory only; agents refill it with their
// next heartbeat after a restart.
//
// Bounds: at most [RosterCap] entries, whose listing costs at most
// [MaxRosterBytes] however old they are. An announcement that would break
// either bound first removes the entries refreshed longest ago, as many as
// it takes; an existing key that refreshes replaces its own entry. So a
// full roster never shuts out a newcomer, and a session that keeps
// announcing stays listed unless others announce faster than it does.
//
// Entries older than [RosterRetention] are hidden from every listing and
// pruned by the next announcement. Entries sit in a list in the order they
// were last refreshed, so pruning and eviction both take from its head. If
// the wall clock goes back, an entry behind the head may expire first; it
// is hidden at once and pruned when it reaches the head or is evicted.
//
// Listings are served from a snapshot, sorted by roster key, that is made
// once after each change and shared by every listing until the next change;
// see [Server.listRoster].
type roster struct {
	mu      sync.Mutex
	entries map[string]*rosterEntry // guarded by mu
	// head is the entry refreshed longest ago, tail the latest; the list
	// links every entry through prev and next. Guarded by mu.
	head, tail *rosterEntry
	bytes      int             // sum of cost() over entries; guarded by mu
	snap       *rosterSnapshot // nil after a change; guarded by mu
}

// rosterEntry is one announcement. key, fields, at and rev are fixed once
// the entry exists; a refresh makes a new entry.
type rosterEntry struct {
	key        string
	fields     []byte // see [wire.Announce]
	at         int64  // receipt time, Unix ms
	rev        uint64 // its revision in a shared roster's log; 0 otherwise
	fsum       uint64 // fieldsSum(fields), set by put
	prev, next *rosterEntry
	// view is the entry as the status page shows it, read from fields
	// the first time the page shows the entry; see statusView.
	view atomic.Pointer[statusSession]
	// priv is what a bus that requires signatures serves of the entry to
	// each requester, derived the first time a listing needs it; see
	// privacyOf.
	priv atomic.Pointer[entryPrivacy]
}

// cost returns the most the entry adds to a /roster response.
func (e *rosterEntry) cost() int { return len(e.fields) + wire.RosterEntryOverhead }

// age returns how old an entry received at is at now, in milliseconds; a
// receipt time in the future (the clock went back) gives 0.
func age(at, now int64) int64 {
	return max(now-at, 0)
}

// upsert prunes expired entries and stores a as the entry of its key,
// removing the entries refreshed longest ago while the roster would
// otherwise break a bound. It returns how many live entries gave way, and
// false if a is too large to list at all (which [MaxAnnounceBytes] rules
// out).
func (ro *roster) upsert(a wire.Announce, now int64) (evicted int, stored bool) {
	gone, stored := ro.put(&rosterEntry{key: a.Key, fields: a.Fields, at: now}, now)
	return len(gone), stored
}

// put is [roster.upsert] for an entry made by the caller, pruning what has
// expired at now. It returns the live entries that gave way.
func (ro *roster) put(e *rosterEntry, now int64) (evicted []*rosterEntry, stored bool) {
	if e.cost() > rosterBudget {
		return nil, false
	}
	e.fsum = fieldsSum(e.fields)
	ro.mu.Lock()
	defer ro.mu.Unlock()
	if ro.entries == nil {
		ro.entries = make(map[string]*rosterEntry)
	}
	for ro.head != nil && age(ro.head.at, now) >= rosterRetainMs {
		ro.unlink(ro.head)
	}
	if old := ro.entries[e.key]; old != nil {
		ro.unlink(old)
	}
	for len(ro.entries) >= RosterCap || ro.bytes+e.cost() > rosterBudget {
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
func (ro *roster) unlink(e *rosterEntry) {
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

// remove deletes the entry for key, if any.
func (ro *roster) remove(key string) {
	ro.mu.Lock()
	defer ro.mu.Unlock()
	if e := ro.entries[key]; e != nil {
		ro.unlink(e)
	}
}

// has reports whether key has an entry, expired or not.
func (ro *roster) has(key string) bool {
	ro.mu.Lock()
	defer ro.mu.Unlock()
	return ro.entries[key] != nil
}

// len returns the number of stored entries, expired ones included.
func (ro *roster) len() int {
	ro.mu.Lock()
	defer ro.mu.Unlock()
	return len(ro.entries)
}

// size returns what the stored entries may cost in a listing, expired ones
// included.
func (ro *roster) size() int {
	ro.mu.Lock()
	defer ro.mu.Unlock()
	return ro.bytes
}

// rosterSnapshot is every stored entry at one moment, sorted by roster key.
// It is never changed once made, so listings use it without the lock.
type rosterSnapshot struct {
	items []snapItem
	// oldest is the earliest receipt time among items (0 without items),
	// and tag the entity tag of a listing of every item, valid while none
	// of them has expired; see [Server.rosterView].
	oldest int64
	tag    string
}

// snapItem is one entry of a snapshot.
type snapItem struct {
	fields []byte
	sum    uint64 // fieldsSum(fields)
	at     int64
	entry  *rosterEntry // for the status page's view of it
}

// snapshot returns the snapshot of the current entries, making it if the
// roster changed since the last one.
func (ro *roster) snapshot() *rosterSnapshot {
	ro.mu.Lock()
	defer ro.mu.Unlock()
	if ro.snap != nil {
		return ro.snap
	}
	keyed := make([]*rosterEntry, 0, len(ro.entries))
	for _, e := range ro.entries {
		keyed = append(keyed, e)
	}
	slices.SortFunc(keyed, func(a, b *rosterEntry) int { return strings.Compare(a.key, b.key) })
	snap := &rosterSnapshot{items: make([]snapItem, len(keyed))}
	for i, e := range keyed {
		snap.items[i] = snapItem{fields: e.fields, sum: e.fsum, at: e.at, entry: e}
		if i == 0 || e.at < snap.oldest {
			snap.oldest = e.at
		}
	}
	snap.tag = listingTag(snap.items)
	ro.snap = snap
	return snap
}

// announce serves POST /announce: store the body as the roster entry of
// its key. The body is neither verified nor interpreted beyond the key;
// clients verify every roster element and drop forgeries. A signed request
// must be signed by the key it announces, and the announcement's own
// signature must verify ([Auth]).
func (s *Server) announce(w http.ResponseWriter, r *http.Request) error {
	signed, err := s.guard.admit(r)
	if err != nil {
		return err
	}
	body, err := readBody(w, r, wire.MaxAnnounceBytes, s.requestTimeout)
	if err != nil {
		return err
	}
	a, err := s.rosterUpdate(r, body, signed, true)
	if err != nil {
		return err
	}
	if s.shared != nil {
		if err := s.shared.announce(a, s.millis(), s.done); err != nil {
			s.log.Error("announce failed", "route", a.Key, "error", err)
			return fmt.Errorf("%w: %w", errStorage, err)
		}
		w.WriteHeader(http.StatusAccepted)
		return nil
	}
	evicted, stored := s.roster.upsert(a, s.millis())
	switch {
	case !stored:
		s.log.Debug("announcement too large to list; dropped", "route", a.Key)
	case evicted > 0:
		s.log.Debug("roster full; entries refreshed longest ago gave way", "route", a.Key, "evicted", evicted)
	}
	w.WriteHeader(http.StatusAccepted)
	return nil
}

// unregister serves POST /unregister: remove one roster entry. Its queue is
// left alone; messages already sent to it wait for the next session. A
// signed request must be signed by the key it unregisters ([Auth]).
func (s *Server) unregister(w http.ResponseWriter, r *http.Request) error {
	signed, err := s.guard.admit(r)
	if err != nil {
		return err
	}
	body, err := readBody(w, r, wire.MaxBodyBytes, s.requestTimeout)
	if err != nil {
		return err
	}
	a, err := s.rosterUpdate(r, body, signed, false)
	if err != nil {
		return err
	}
	if s.shared != nil {
		if err := s.shared.unregister(a.Key, s.done); err != nil {
			s.log.Error("unregister failed", "route", a.Key, "error", err)
			return fmt.Errorf("%w: %w", errStorage, err)
		}
		w.WriteHeader(http.StatusAccepted)
		return nil
	}
	s.roster.remove(a.Key)
	w.WriteHeader(http.StatusAccepted)
	return nil
}

// rosterUpdate decodes the body of an /announce (announce set) or
// /unregister request and, for a signed one, checks its signature, its
// signer and the signer's roster bucket.
func (s *Server) rosterUpdate(r *http.Request, body []byte, signed, announce bool) (wire.Announce, error) {
	var signer identity.PublicKey
	if signed {
		var err error
		if signer, err = s.guard.verify(r, body); err != nil {
			return wire.Announce{}, err
		}
	}
	a, err := wire.DecodeAnnounce(body)
	if err != nil || !signed {
		return a, err
	}
	own := body
	if !announce {
		own = nil
	}
	if err := s.guard.announcer(signer, a, own); err != nil {
		return a, err
	}
	return a, s.guard.allowRoster(signer)
}

// listRoster serves GET /roster: every live announcement as it was sent,
// with "age_ms" set to the time since it arrived (replacing any age_ms the
// sender put in), in roster key order. With the query keys=K1,K2,...
// ([wire.DecodeRosterQuery]) it lists only the entries of those keys, so
// an agent that knows whom it writes to reads a few entries, not the
// roster.
//
// Each entry's fields were encoded once, when it was announced, and the
// sorted list of them once per change of the roster. A listing only
// splices the ages in: it measures the response first, so it can send a
// Content-Length, then writes it piece by piece. However many clients list
// a full roster at once, each costs the bus little more than its
// connection, never a copy of the roster.
//
// Every answer carries an entity tag (see [Server.rosterView]); a request
// whose If-None-Match names it gets 304 and no body.
//
// A signed request is verified and a bad signature refused, as on every
// route; an unsigned one takes a token of its address's bucket. The
// listing is the same either way, unless the bus requires signatures
// ([AuthRequired]): then each entry shows its details only to its own key
// and the readers it names, and to everyone else its public variant if it
// is discoverable, or nothing (see entryPrivacy).
func (s *Server) listRoster(w http.ResponseWriter, r *http.Request) error {
	signed, err := s.guard.admitOpen(r)
	if err != nil {
		return err
	}
	var requester *identity.PublicKey
	if signed {
		key, err := s.guard.verify(r, nil)
		if err != nil {
			return err
		}
		requester = &key
	}
	q, err := wire.DecodeRosterQuery(r.URL.RawQuery)
	if err != nil {
		return err
	}
	now := s.millis()
	items, tag := s.rosterView(s.roster.snapshot(), q.Keys, requester, now)
	h := w.Header()
	s.setRosterHeaders(h, tag)
	if tagMatches(r.Header.Values("If-None-Match"), tag) {
		w.WriteHeader(http.StatusNotModified)
		return nil
	}
	n, live := len(wire.RosterOpen)+len(wire.RosterClose), 0
	for _, it := range items {
		a := age(it.at, now)
		if a >= rosterRetainMs {
			continue
		}
		n += wire.RosterEntryLen(live == 0, a, len(it.fields))
		live++
	}
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(n))
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return nil
	}
	// A write error means the client left; stop there.
	if _, err := io.WriteString(w, wire.RosterOpen); err != nil {
		return nil
	}
	var scratch [len(`,{"age_ms":,`) + 20]byte
	first := true
	for _, it := range items {
		a := age(it.at, now)
		if a >= rosterRetainMs {
			continue
		}
		b := wire.AppendRosterEntryHead(scratch[:0], first, a, len(it.fields) > 0)
		first = false
		if _, err := w.Write(b); err != nil {
			return nil
		}
		if _, err := w.Write(it.fields); err != nil {
			return nil
		}
		if _, err := w.Write(entryClose); err != nil {
			return nil
		}
	}
	_, _ = io.WriteString(w, wire.RosterClose)
	return nil
}
