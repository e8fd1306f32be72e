package tools

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/relay"
	"github.com/interlink-go/interlink/internal/render"
	"github.com/interlink-go/interlink/internal/route"
	"github.com/interlink-go/interlink/internal/untrusted"
)

// target is where a message goes: a key, the label the caller used, and the
// chosen session with what the roster says about it.
type target struct {
	key     identity.PublicKey
	label   string // as typed, or "self"
	session string
	where   whereabouts
}

// whereabouts is what the roster says about the chosen session.
type whereabouts struct {
	kind    presenceKind
	ageMS   uint64
	sibling string // a live session of the same identity, for away
	// unread holds the relays whose roster could not be read, as
	// "<url>: <error>"; noRoster is set when that was every relay.
	unread   []string
	noRoster bool
}

type presenceKind int

const (
	live presenceKind = iota
	away
	gone
)

// pickTarget picks the session of key that a message from s, a session of
// own, goes to: the one hint names, or the one routing chooses (see
// route.Select) from the verified rosters of relays, the session the peer
// last wrote from and, for the own key, every session but this one. It
// reads only key's entries from each relay (relay.FetchRosterOf), never
// the whole roster.
func (m *Messaging) pickTarget(ctx context.Context, s *MessagingSession, key identity.PublicKey, label, hint string) (target, error) {
	t := target{key: key, label: label}
	self := key == m.Signer.Public()
	ros := relay.FetchRosterOf(ctx, m.Relays, key)
	learnCaps(ctx, m.Sealing, m.Log, ros, func(k identity.PublicKey) bool { return k == key })
	var entries []relay.Entry
	for _, e := range ros.Entries {
		if e.Key != key || e.Session.SessionID == "" {
			continue
		}
		if self && e.Session.SessionID == s.ID {
			continue
		}
		entries = append(entries, e)
	}
	q := route.Query{Hint: hint}
	for _, e := range entries {
		q.Sessions = append(q.Sessions, route.Session{ID: e.Session.SessionID, Live: e.Live})
	}
	if self {
		q.Exclude = s.ID
	} else if id, ok := m.Sticky.Get(key); ok {
		q.Sticky = id
	}
	id, err := route.Select(q)
	if err != nil {
		return t, routeError(err, label, hint, entries, ros)
	}
	t.session = id
	t.where = whereabouts{kind: gone, unread: ros.Failures, noRoster: ros.Available == 0}
	for _, e := range entries {
		if e.Session.SessionID != id {
			continue
		}
		if e.Live {
			t.where = whereabouts{kind: live}
		} else {
			t.where = whereabouts{kind: away, ageMS: e.AgeMS}
			for _, sib := range entries {
				if sib.Live && sib.Session.SessionID != id {
					t.where.sibling = sib.Session.SessionID
					break
				}
			}
		}
		break
	}
	return t, nil
}

// routeError explains why no session could be chosen. When relays did not
// answer with a roster it says so, since "no session on the roster" would
// then be a guess.
func routeError(err error, label, hint string, entries []relay.Entry, ros relay.Roster) error {
	var amb *route.AmbiguousError
	switch {
	case errors.Is(err, route.ErrOwnSession):
		return invalidf("session %q is this session; a session cannot message itself", hint)
	case errors.Is(err, route.ErrInvalidSession):
		return invalidf("session %q is not a valid session id: %v", hint, err)
	case errors.As(err, &amb) && hint != "":
		return invalidf("session %q matches several sessions of %s; pass the full id:\n%s", hint, label, sessionList(entries))
	case errors.As(err, &amb):
		nLive := 0
		for _, e := range entries {
			if e.Live {
				nLive++
			}
		}
		if nLive > 1 {
			return invalidf("%s has more than one live session; pass session=<id>:\n%s", label, sessionList(entries))
		}
		return invalidf("%s has several sessions, all away; pass session=<id>:\n%s", label, sessionList(entries))
	case errors.Is(err, route.ErrNoSession) && ros.Available == 0:
		return invalidf("could not read a roster from any relay, so no session of %s can be chosen; "+
			"try again when a relay answers, or pass session=<id> if you know it:\n%s", label, rosterFailures(ros.Failures))
	case errors.Is(err, route.ErrNoSession) && label == "self":
		return invalidf("no other session of this identity is on the roster to reach%s", unreadNote(ros.Failures))
	case errors.Is(err, route.ErrNoSession):
		return invalidf("%s has no session on the roster; it may be offline (run discover)%s", label, unreadNote(ros.Failures))
	}
	return invalidf("%v", err)
}

// rosterFailures lists the relays whose roster could not be read, one per
// line. The errors are cleaned: a relay's error text is untrusted.
func rosterFailures(failures []string) string {
	lines := make([]string, len(failures))
	for i, f := range failures {
		lines[i] = "  " + untrusted.Clean(f)
	}
	return strings.Join(lines, "\n")
}

// unreadNote adds the relays whose roster could not be read to a message
// about the roster, if there are any.
func unreadNote(failures []string) string {
	if len(failures) == 0 {
		return ""
	}
	return fmt.Sprintf("; the roster of %d relay(s) could not be read, so the session may be listed there:\n%s",
		len(failures), rosterFailures(failures))
}

// note is the tail of a send result: where the message is going.
func (w whereabouts) note() string {
	switch w.kind {
	case live:
		return "the session is live; delivering in the background"
	case away:
		var s string
		if w.ageMS < dayMS {
			s = fmt.Sprintf("the session is away (last seen %s ago), probably asleep; it will get the message when it wakes", ago(w.ageMS))
		} else {
			s = fmt.Sprintf("the session was last seen %s ago and may be gone rather than asleep; run discover", ago(w.ageMS))
		}
		if w.sibling != "" {
			s += fmt.Sprintf(". Session %s of the same identity is live: pass session=%q to reach it now",
				render.Inert(untrusted.Label(w.sibling)), render.Inert(w.sibling))
		}
		return s
	}
	if w.noRoster {
		return "no relay's roster could be read, so whether the session exists is unknown; delivering in the background"
	}
	return "the session is not on the roster, so delivery may never happen; run discover" + unreadNote(w.unread)
}
