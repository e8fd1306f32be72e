package relay

import (
	"context"
	"encoding/json"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/interlink-go/interlink/internal/identity"
)

// LiveWindow is how recently a session must have announced itself, by the
// relay's clock, to count as live rather than away. Agents announce every
// 30 s, so a live session has missed at most two announcements.
const LiveWindow = 90 * time.Second

// Entry is one verified roster announcement. Key is proven by the
// signature; Name and Session are what that key claims about itself and are
// raw text: clean them (package untrusted) before showing them.
type Entry struct {
	Key     identity.PublicKey
	Name    string
	Session identity.SessionInfo
	// AgeMS is the relay's count of milliseconds since the announcement
	// arrived; an absent age counts as 0. It is not signed, so a relay can
	// make a session look live or away, but not invent one.
	AgeMS uint64
	// Live reports whether AgeMS is below LiveWindow.
	Live bool
	// Caps is the announcement's signed capabilities list when CapsSigned
	// (see [identity.Announcement.VerifiedCaps]), and CapsTS the signing
	// time of that announcement (0 without a signed list). When relays disagree, the newest signed
	// list any of them served is kept, so a relay that strips the list
	// cannot hide it while another serves it.
	Caps       []string
	CapsSigned bool
	CapsTS     uint64
}

// Roster is the verified roster across relays.
type Roster struct {
	// Entries holds each key#session_id once, as the first relay in the
	// list reported it, in first-seen order. An announcement with an empty
	// session_id names an identity without a session; it is kept so that
	// Groups sees the identity, but it adds no session.
	Entries []Entry
	// Failures holds "<url>: <error>" for every relay whose roster could
	// not be read, in relay order.
	Failures []string
	// Available counts the relays that returned a valid roster, even an
	// empty one.
	Available int
}

// FetchRoster reads the roster of every relay at once and merges the
// answers in the order of clients, so the result does not depend on which
// relay answered first. Each element is decoded on its own, and elements
// that do not decode as announcements (wrong types, nesting too deep, not
// JSON at all) or whose signature does not verify are skipped without a
// failure: a relay can store anything anyone posted, and junk must never
// hide the entries that verify. How many were skipped, and why, is logged
// once per relay at debug level.
//
// Each relay is asked with the tag of the roster it last served
// ([Client.RosterRevalidated]): one whose roster has not changed answers
// 304, and its kept roster is used with the ages moved on.
//
// The entries of a kept roster are decoded and verified once: a relay
// that answers 304 costs neither, however many entries it lists.
func FetchRoster(ctx context.Context, clients []*Client) Roster {
	return fetch(ctx, clients, nil, func(c *Client) (*checkedRoster, time.Duration, error) {
		return c.rosterChecked(ctx)
	})
}

// FetchRosterOf is [FetchRoster] for the entries of keys alone (at most
// [wire.MaxRosterKeys]), read by the lookup [Client.RosterOf]: what a
// send to a known peer needs, in a few hundred bytes per relay however
// large the roster is. On a relay that serves each requester its own
// listing, it is also how a peer's details reach the agents it names as
// readers.
func FetchRosterOf(ctx context.Context, clients []*Client, keys ...identity.PublicKey) Roster {
	return fetch(ctx, clients, keys, func(c *Client) (*checkedRoster, time.Duration, error) {
		elems, err := c.RosterOf(ctx, keys)
		if err != nil {
			return nil, 0, err
		}
		return checkElems(elems), 0, nil
	})
}

// checkedRoster is a relay's roster decoded and verified: the entries
// whose signature verifies, and how many were skipped. It is not changed
// once made, so a kept roster's may be shared; what [fetch] hands out of
// it is copied.
type checkedRoster struct {
	entries     []checkedEntry
	undecodable int // elements that are no announcement
	badSig      int // announcements whose signature does not verify
}

// checkedEntry is one announcement whose signature verifies, with the
// key it proves and its signed capabilities list, if any.
type checkedEntry struct {
	ann    identity.Announcement
	key    identity.PublicKey
	caps   []string
	signed bool
}

// checkShare is the fewest elements [checkElems] gives a goroutine of its
// own: below it, starting one costs more than it saves.
const checkShare = 256

// checkElems decodes and verifies each element on its own. A roster of
// thousands of entries costs two signature checks each, a quarter of a
// millisecond an entry; its elements are checked in shares on every
// processor, and the shares put together in the roster's order.
func checkElems(elems []json.RawMessage) *checkedRoster {
	workers := min(runtime.GOMAXPROCS(0), len(elems)/checkShare)
	if workers <= 1 {
		return checkShareOf(elems)
	}
	per := (len(elems) + workers - 1) / workers
	shares := make([]*checkedRoster, workers)
	var wg sync.WaitGroup
	for w := range shares {
		lo, hi := w*per, min((w+1)*per, len(elems))
		wg.Go(func() { shares[w] = checkShareOf(elems[lo:hi]) })
	}
	wg.Wait()
	cr := &checkedRoster{entries: make([]checkedEntry, 0, len(elems))}
	for _, s := range shares {
		cr.entries = append(cr.entries, s.entries...)
		cr.undecodable += s.undecodable
		cr.badSig += s.badSig
	}
	return cr
}

// checkShareOf checks elems one after the other.
func checkShareOf(elems []json.RawMessage) *checkedRoster {
	cr := &checkedRoster{entries: make([]checkedEntry, 0, len(elems))}
	for _, elem := range elems {
		a, err := identity.DecodeAnnouncement(elem)
		if err != nil {
			cr.undecodable++
			continue
		}
		key, err := a.Verify()
		if err != nil {
			cr.badSig++
			continue
		}
		caps, signed := a.VerifiedCaps()
		cr.entries = append(cr.entries, checkedEntry{ann: a, key: key, caps: caps, signed: signed})
	}
	return cr
}

// fetch reads every relay's roster with read and merges the answers as
// [FetchRoster] describes, keeping the entries of keys alone unless keys
// is empty.
func fetch(ctx context.Context, clients []*Client, keys []identity.PublicKey, read func(*Client) (*checkedRoster, time.Duration, error)) Roster {
	type result struct {
		checked *checkedRoster
		since   time.Duration // how long ago the relay served it
		err     error
	}
	results := make([]result, len(clients))
	var wg sync.WaitGroup
	for i, c := range clients {
		wg.Go(func() {
			results[i].checked, results[i].since, results[i].err = read(c)
		})
	}
	wg.Wait()

	var r Roster
	seen := make(map[string]int) // route -> index in r.Entries
	for i, res := range results {
		if res.err != nil {
			r.Failures = append(r.Failures, clients[i].base+": "+res.err.Error())
			continue
		}
		r.Available++
		for _, ce := range res.checked.entries {
			a, key, caps, signed := &ce.ann, ce.key, ce.caps, ce.signed
			if len(keys) > 0 && !slices.Contains(keys, key) {
				continue
			}
			route := key.String() + "#" + a.Session.SessionID
			if i, ok := seen[route]; ok {
				if e := &r.Entries[i]; signed && (!e.CapsSigned || a.TS > e.CapsTS) {
					e.Caps, e.CapsSigned, e.CapsTS = slices.Clone(caps), true, a.TS
				}
				continue
			}
			seen[route] = len(r.Entries)
			var age uint64
			if a.AgeMS != nil {
				// A kept roster's ages moved on by the time since it came.
				age = *a.AgeMS + uint64(res.since.Milliseconds())
			}
			r.Entries = append(r.Entries, Entry{
				Key:     key,
				Name:    a.Name,
				Session: a.Session,
				AgeMS:   age,
				Live:    age < uint64(LiveWindow.Milliseconds()),
				Caps:    slices.Clone(caps), CapsSigned: signed, CapsTS: capsTS(signed, a.TS),
			})
		}
		if cr := res.checked; cr.undecodable > 0 || cr.badSig > 0 {
			clients[i].log.Debug("roster entries skipped", "relay", clients[i].base,
				"undecodable", cr.undecodable, "bad_signature", cr.badSig)
		}
	}
	return r
}

// capsTS is the time of a signed capabilities list, or 0 without one.
func capsTS(signed bool, ts uint64) uint64 {
	if signed {
		return ts
	}
	return 0
}

// Group is one identity on the roster with its sessions.
type Group struct {
	Key identity.PublicKey
	// Name is the name in the first announcement seen for Key. Like every
	// roster name it is an unverified claim.
	Name string
	// Sessions holds the identity's entries with a non-empty session id,
	// in roster order. It may be empty.
	Sessions []Entry
}

// Groups groups the entries by key, in the order each key first appears.
// Entries with an empty session id only contribute the identity and,
// if first, its name.
func (r Roster) Groups() []Group {
	var groups []Group
	index := make(map[identity.PublicKey]int)
	for _, e := range r.Entries {
		i, ok := index[e.Key]
		if !ok {
			i = len(groups)
			index[e.Key] = i
			groups = append(groups, Group{Key: e.Key, Name: e.Name})
		}
		if e.Session.SessionID != "" {
			groups[i].Sessions = append(groups[i].Sessions, e)
		}
	}
	return groups
}
