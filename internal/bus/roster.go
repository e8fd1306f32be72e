package bus

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// rosterRetainMs is [RosterRetention] in milliseconds.
const rosterRetainMs = int64(RosterRetention / time.Millisecond)

// roster is the presence list: roster key → the last announcement for it
// and when it arrived. It lives in memory only; agents refill it with their
// next heartbeat after a restart.
//
// Bound: at most [RosterCap] entries. Entries older than [RosterRetention]
// are pruned on every announce and hidden from every listing; when the
// roster is full of live entries, announcements for new keys are dropped
// while existing keys can still refresh.
type roster struct {
	mu      sync.Mutex
	entries map[string]rosterEntry // guarded by mu
	// oldest is at most the earliest receipt time in entries, so while
	// now-oldest < retention nothing can have expired and the prune scan
	// is skipped. Guarded by mu.
	oldest int64
}

// rosterEntry is one announcement. fields is immutable once stored, so a
// listing may keep using it after the lock is released.
type rosterEntry struct {
	fields []byte // see announcement.fields
	at     int64  // receipt time, Unix ms
}

// age returns how old e is at now, in milliseconds; a receipt time in the
// future (the clock went back) gives 0.
func (e rosterEntry) age(now int64) int64 {
	return max(now-e.at, 0)
}

// upsert prunes expired entries and stores a, unless the roster is full and
// a.key is new. It reports whether a was stored.
func (ro *roster) upsert(a announcement, now int64) bool {
	ro.mu.Lock()
	defer ro.mu.Unlock()
	if ro.entries == nil {
		ro.entries = make(map[string]rosterEntry)
	}
	if len(ro.entries) > 0 && now-ro.oldest >= rosterRetainMs {
		ro.oldest = now
		for k, e := range ro.entries {
			if e.age(now) >= rosterRetainMs {
				delete(ro.entries, k)
			} else {
				ro.oldest = min(ro.oldest, e.at)
			}
		}
	}
	if _, ok := ro.entries[a.key]; !ok && len(ro.entries) >= RosterCap {
		return false
	}
	if len(ro.entries) == 0 {
		ro.oldest = now
	}
	ro.oldest = min(ro.oldest, now)
	ro.entries[a.key] = rosterEntry{fields: a.fields, at: now}
	return true
}

// remove deletes the entry for key, if any.
func (ro *roster) remove(key string) {
	ro.mu.Lock()
	defer ro.mu.Unlock()
	delete(ro.entries, key)
}

// len returns the number of stored entries, expired ones included.
func (ro *roster) len() int {
	ro.mu.Lock()
	defer ro.mu.Unlock()
	return len(ro.entries)
}

// listing returns the entries that have not expired at now, ordered by
// roster key so the output is stable.
func (ro *roster) listing(now int64) []rosterEntry {
	type keyed struct {
		key string
		rosterEntry
	}
	ro.mu.Lock()
	live := make([]keyed, 0, len(ro.entries))
	for k, e := range ro.entries {
		if e.age(now) < rosterRetainMs {
			live = append(live, keyed{k, e})
		}
	}
	ro.mu.Unlock()
	slices.SortFunc(live, func(a, b keyed) int { return strings.Compare(a.key, b.key) })
	out := make([]rosterEntry, len(live))
	for i, e := range live {
		out[i] = e.rosterEntry
	}
	return out
}

// announce serves POST /announce: store the body as the roster entry of
// its key. The body is neither verified nor interpreted beyond the key;
// clients verify every roster element and drop forgeries.
func (s *Server) announce(w http.ResponseWriter, r *http.Request) error {
	body, err := readBody(w, r, MaxAnnounceBytes)
	if err != nil {
		return err
	}
	a, err := decodeAnnouncement(body)
	if err != nil {
		return err
	}
	if !s.roster.upsert(a, s.millis()) {
		s.log.Debug("roster full; announcement dropped", "route", a.key)
	}
	w.WriteHeader(http.StatusAccepted)
	return nil
}

// unregister serves POST /unregister: remove one roster entry. Its queue is
// left alone; messages already sent to it wait for the next session.
func (s *Server) unregister(w http.ResponseWriter, r *http.Request) error {
	body, err := readBody(w, r, MaxBodyBytes)
	if err != nil {
		return err
	}
	a, err := decodeAnnouncement(body)
	if err != nil {
		return err
	}
	s.roster.remove(a.key)
	w.WriteHeader(http.StatusAccepted)
	return nil
}

// listRoster serves GET /roster: every live announcement as it was sent,
// with "age_ms" set to the time since it arrived (replacing any age_ms the
// sender put in).
func (s *Server) listRoster(w http.ResponseWriter, _ *http.Request) error {
	now := s.millis()
	entries := s.roster.listing(now)
	n := len(`{"roster":[]}`)
	for _, e := range entries {
		n += len(`{"age_ms":},`) + 20 + len(e.fields)
	}
	b := make([]byte, 0, n)
	b = append(b, `{"roster":[`...)
	for i, e := range entries {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"age_ms":`...)
		b = strconv.AppendInt(b, e.age(now), 10)
		if len(e.fields) > 0 {
			b = append(b, ',')
			b = append(b, e.fields...)
		}
		b = append(b, '}')
	}
	b = append(b, "]}"...)
	writeJSON(w, http.StatusOK, b)
	return nil
}
