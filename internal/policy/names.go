package policy

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/protocol"
)

// maxListedNames bounds how many petnames an unknown-peer error lists.
const maxListedNames = 20

// ResolveSendTarget resolves the recipient of a message that is being sent.
// "self", in any case and with surrounding white space, is our own key own
// (another session of this identity) and returns the name "self". Anything
// else must be a petname, matched exactly: case-sensitive and untrimmed.
//
// Keys and fingerprints are deliberately not accepted: a message goes only to
// a peer the operator has named, so a typo or a key pasted from untrusted
// text cannot send anything to a stranger. An unknown name is an error
// wrapping [ErrUnknownPeer] that lists the known petnames.
func (p *Policy) ResolveSendTarget(to string, own identity.PublicKey) (identity.PublicKey, string, error) {
	if strings.EqualFold(strings.TrimSpace(to), protocol.SelfSender) {
		return own, protocol.SelfSender, nil
	}
	if k, ok := p.Key(to); ok {
		return k, to, nil
	}
	return identity.PublicKey{}, "", fmt.Errorf("policy: %w", &UnknownPeerError{Target: to,
		Want:  fmt.Sprintf("%q or a petname from peers.json (keys and fingerprints are not accepted)", protocol.SelfSender),
		Known: p.knownNames()})
}

// knownNames describes the petnames of p for an error message.
func (p *Policy) knownNames() string {
	es := p.Entries()
	if len(es) == 0 {
		return "peers.json lists no peers"
	}
	shown := es[:min(len(es), maxListedNames)]
	names := make([]string, len(shown))
	for i, e := range shown {
		names[i] = fmt.Sprintf("%q", e.Name)
	}
	s := "known petnames: " + strings.Join(names, ", ")
	if more := len(es) - len(shown); more > 0 {
		s += fmt.Sprintf(" and %d more", more)
	}
	return s
}

// RosterEntry is one verified entry of the presence roster: the key that
// signed an announcement and the name it announced, already cleaned (see
// [untrusted.Name]). A key appears once per live session, so several
// entries may share a key.
type RosterEntry struct {
	Key  identity.PublicKey
	Name string
}

// ResolveRoster finds the key that target denotes among the roster entries,
// trying in order:
//
//  1. the full text of a key on the roster;
//  2. the 8-character fingerprint of exactly one distinct key;
//  3. the announced name of exactly one distinct key.
//
// All matches are exact; target is not trimmed. A fingerprint or name that
// matches several keys is an [*AmbiguousError] listing them, since a
// fingerprint is no proof and announced names are chosen by their owners;
// the caller must then be more specific. No match is an error wrapping
// [ErrUnknownPeer].
func ResolveRoster(target string, roster []RosterEntry) (identity.PublicKey, error) {
	if target != "" {
		if keys := matchRoster(roster, func(e RosterEntry) bool { return e.Key.String() == target }); len(keys) > 0 {
			return keys[0], nil
		}
		if len(target) == identity.FingerprintLen {
			keys := matchRoster(roster, func(e RosterEntry) bool { return e.Key.Fingerprint() == target })
			if len(keys) > 0 {
				return unique(target, keys)
			}
		}
		if keys := matchRoster(roster, func(e RosterEntry) bool { return e.Name == target }); len(keys) > 0 {
			return unique(target, keys)
		}
	}
	return identity.PublicKey{}, fmt.Errorf("policy: %w", &UnknownPeerError{Target: target,
		Want: "a full key, an 8-character fingerprint or a name on the roster"})
}

// matchRoster returns the distinct keys of the entries that match, sorted by
// their text form.
func matchRoster(roster []RosterEntry, match func(RosterEntry) bool) []identity.PublicKey {
	var keys []identity.PublicKey
	for _, e := range roster {
		if match(e) && !slices.Contains(keys, e.Key) {
			keys = append(keys, e.Key)
		}
	}
	slices.SortFunc(keys, func(a, b identity.PublicKey) int { return strings.Compare(a.String(), b.String()) })
	return keys
}

// unique returns the only key of keys, which is not empty, or an
// [*AmbiguousError] if there are several.
func unique(target string, keys []identity.PublicKey) (identity.PublicKey, error) {
	if len(keys) > 1 {
		return identity.PublicKey{}, fmt.Errorf("policy: %w", &AmbiguousError{Target: target, Keys: keys})
	}
	return keys[0], nil
}

// ResolvePeer resolves the peer argument of a discovery query. target is
// trimmed, then looked up as a petname, which returns the petname; failing
// that, it is resolved on the roster with [ResolveRoster], which returns an
// empty name.
func (p *Policy) ResolvePeer(target string, roster []RosterEntry) (identity.PublicKey, string, error) {
	target = strings.TrimSpace(target)
	if k, ok := p.Key(target); ok && target != "" {
		return k, target, nil
	}
	k, err := ResolveRoster(target, roster)
	if errors.Is(err, ErrUnknownPeer) {
		return identity.PublicKey{}, "", fmt.Errorf("policy: %w", &UnknownPeerError{Target: target,
			Want: "a petname, a full key, an 8-character fingerprint or a name on the roster"})
	}
	if err != nil {
		return identity.PublicKey{}, "", err
	}
	return k, "", nil
}
