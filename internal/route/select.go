package route

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// A Session is one session of a key as the verified roster lists it.
type Session struct {
	// ID is the session id the session announced.
	ID string
	// Live reports whether the session is currently polling the bus; a
	// session that is listed but not live is away.
	Live bool
}

// A Query describes one choice of session for [Select].
type Query struct {
	// Sessions are the target key's sessions on the verified roster, live
	// and away. Entries with an empty ID are ignored, and an ID listed
	// twice counts once (live if any entry is live).
	Sessions []Session
	// Hint is the session the caller asked for, as typed: an exact id or a
	// prefix of one. Select trims surrounding white space; an empty or blank
	// hint means none was given.
	Hint string
	// Sticky is the session this peer was last talked to in, or empty.
	Sticky string
	// Exclude is the caller's own session id. It is set only when the target
	// key is the caller's own identity, so that a message to a sibling
	// session never loops back to the sender.
	Exclude string
}

// Select picks the session to address for q and returns its id. The caller
// builds the route with [New].
//
// Candidates are q.Sessions without q.Exclude. With a hint:
//
//   - a hint equal to q.Exclude is refused with [ErrOwnSession];
//   - a hint failing [ValidateSession] is refused with [ErrInvalidSession];
//   - a candidate whose id equals the hint wins;
//   - otherwise the candidates whose id starts with the hint: exactly one is
//     chosen, several give an [*AmbiguousError];
//   - with no match the hint itself is returned, so the message waits in the
//     queue of a session that is not on the roster now.
//
// Without a hint:
//
//   - q.Sticky, if it is still a candidate (live or away);
//   - else the only live candidate; several live give an [*AmbiguousError];
//   - else, none being live, the only away candidate; several give an
//     [*AmbiguousError];
//   - else, with no candidates at all, q.Sticky if set (a guess that the
//     session will come back), or [ErrNoSession].
//
// When q.Exclude is set, the target is the caller's own identity and the
// speculative fallback is skipped: with no other session on the roster there
// is no sibling to reach, so Select returns [ErrNoSession] even when q.Sticky
// is set. A q.Sticky equal to q.Exclude is thus never chosen, since it is
// not a candidate either.
//
// Select does not check roster ids against [ValidateSession]: they are what
// the other side announced, and a route treats them as opaque.
func Select(q Query) (string, error) {
	cands, live := candidates(q)
	if hint := strings.TrimSpace(q.Hint); hint != "" {
		return selectHint(hint, q.Exclude, cands)
	}

	if q.Sticky != "" && slices.Contains(cands, q.Sticky) {
		return q.Sticky, nil
	}
	switch {
	case len(live) == 1:
		return live[0], nil
	case len(live) > 1:
		return "", &AmbiguousError{Matches: live}
	case len(cands) == 1:
		return cands[0], nil
	case len(cands) > 1:
		return "", &AmbiguousError{Matches: cands}
	case q.Sticky != "" && q.Exclude == "":
		return q.Sticky, nil
	}
	return "", ErrNoSession
}

// selectHint applies the hint rules of [Select] to the sorted candidate ids.
func selectHint(hint, exclude string, cands []string) (string, error) {
	if exclude != "" && hint == exclude {
		return "", ErrOwnSession
	}
	// The hint may come back verbatim as the session of a route, so it must
	// pass the same rule as any other locally supplied session id.
	if err := ValidateSession(hint); err != nil {
		return "", err
	}
	if slices.Contains(cands, hint) {
		return hint, nil
	}
	var matches []string
	for _, id := range cands {
		if strings.HasPrefix(id, hint) {
			matches = append(matches, id)
		}
	}
	switch len(matches) {
	case 0:
		return hint, nil
	case 1:
		return matches[0], nil
	}
	return "", &AmbiguousError{Hint: hint, Matches: matches}
}

// candidates returns the sorted, distinct ids of q.Sessions other than
// q.Exclude and the empty id, and the sorted subset of those that are live.
func candidates(q Query) (all, live []string) {
	seen := make(map[string]bool, len(q.Sessions))
	for _, s := range q.Sessions {
		if s.ID == "" || s.ID == q.Exclude {
			continue
		}
		seen[s.ID] = seen[s.ID] || s.Live
	}
	for id, isLive := range seen {
		all = append(all, id)
		if isLive {
			live = append(live, id)
		}
	}
	slices.Sort(all)
	slices.Sort(live)
	return all, live
}

// An AmbiguousError reports that several sessions fit a selection. It wraps
// [ErrAmbiguous].
type AmbiguousError struct {
	// Hint is the trimmed session hint, or empty when none was given.
	Hint string
	// Matches are the ids that fit, sorted.
	Matches []string
}

// Error lists the matching ids, each quoted since they come from the roster.
func (e *AmbiguousError) Error() string {
	quoted := make([]string, len(e.Matches))
	for i, id := range e.Matches {
		quoted[i] = strconv.Quote(id)
	}
	list := strings.Join(quoted, ", ")
	if e.Hint == "" {
		return fmt.Sprintf("%v: no session hint and %d sessions fit: %s", ErrAmbiguous, len(e.Matches), list)
	}
	return fmt.Sprintf("%v: hint %q fits %d sessions: %s", ErrAmbiguous, e.Hint, len(e.Matches), list)
}

// Unwrap returns [ErrAmbiguous].
func (e *AmbiguousError) Unwrap() error {
	return ErrAmbiguous
}
