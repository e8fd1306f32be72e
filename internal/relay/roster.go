package relay

import (
	"context"
	"encoding/json"
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
func FetchRoster(ctx context.Context, clients []*Client) Roster {
	return fetch(ctx, clients, nil, func(c *Client) ([]json.RawMessage, time.Duration, error) {
		return c.RosterRevalidated(ctx)
	})
}

// FetchRosterOf is [FetchRoster] for the entries of keys alone (at most
// [wire.MaxRosterKeys]), read by the lookup [Client.RosterOf]: what a
// send to a known peer needs, in a few hundred bytes per relay however
// large the roster is. On a relay that serves each requester its own
// listing, it is also how a peer's details reach the agents it names as
// readers.
func FetchRosterOf(ctx context.Context, clients []*Client, keys ...identity.PublicKey) Roster {
	return fetch(ctx, clients, keys, func(c *Client) ([]json.RawMessage, time.Duration, error) {
		elems, err := c.RosterOf(ctx, keys)
		return elems, 0, err
	})
}

// fetch reads every relay's roster with read and merges the answers as
// [FetchRoster] describes, keeping the entries of keys alone unless keys
// is empty.
func fetch(ctx context.Context, clients []*Client, keys []identity.PublicKey, read func(*Client) ([]json.RawMessage, time.Duration, error)) Roster {
	type result struct {
		elems       []identity.Announcement
		err         error
		undecodable int
	}
	results := make([]result, len(clients))
	var wg sync.WaitGroup
	for i, c := range clients {
		wg.Go(func() {
			raw, since, err := read(c)
			if err != nil {
				results[i].err = err
				return
			}
			anns := make([]identity.Announcement, 0, len(raw))
			for _, elem := range raw {
				a, err := identity.DecodeAnnouncement(elem)
				if err != nil {
					results[i].undecodable++
					continue
				}
				if a.AgeMS != nil && since > 0 {
					aged := *a.AgeMS + uint64(since.Milliseconds())
					a.AgeMS = &aged
				}
				anns = append(anns, a)
			}
			results[i].elems = anns
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
		badSig := 0
		for _, a := range res.elems {
			key, err := a.Verify()
			if err != nil {
				badSig++
				continue
			}
			if len(keys) > 0 && !slices.Contains(keys, key) {
				continue
			}
			route := key.String() + "#" + a.Session.SessionID
			caps, signed := a.VerifiedCaps()
			if i, ok := seen[route]; ok {
				if e := &r.Entries[i]; signed && (!e.CapsSigned || a.TS > e.CapsTS) {
					e.Caps, e.CapsSigned, e.CapsTS = caps, true, a.TS
				}
				continue
			}
			seen[route] = len(r.Entries)
			var age uint64
			if a.AgeMS != nil {
				age = *a.AgeMS
			}
			r.Entries = append(r.Entries, Entry{
				Key:     key,
				Name:    a.Name,
				Session: a.Session,
				AgeMS:   age,
				Live:    age < uint64(LiveWindow.Milliseconds()),
				Caps:    caps, CapsSigned: signed, CapsTS: capsTS(signed, a.TS),
			})
		}
		if res.undecodable > 0 || badSig > 0 {
			clients[i].log.Debug("roster entries skipped", "relay", clients[i].base,
				"undecodable", res.undecodable, "bad_signature", badSig)
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
