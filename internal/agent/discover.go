package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/policy"
	"github.com/interlink-go/interlink/internal/presence"
	"github.com/interlink-go/interlink/internal/relay"
	"github.com/interlink-go/interlink/internal/render"
	"github.com/interlink-go/interlink/internal/untrusted"
)

const dayMS = 86_400_000

// Ago renders a duration in milliseconds the way session lists do: seconds
// below 90 s, minutes below 90 min, hours below 48 h, then days.
func Ago(ms uint64) string {
	s := ms / 1000
	switch {
	case s < 90:
		return fmt.Sprintf("%ds", s)
	case s < 5400:
		return fmt.Sprintf("%dm", s/60)
	case s < 172800:
		return fmt.Sprintf("%dh", s/3600)
	default:
		return fmt.Sprintf("%d days", s/86400)
	}
}

// sessionLine describes a roster session on one line: id, working folder,
// git repository and quoted summary, each cleaned, joined by " · ".
func sessionLine(s identity.SessionInfo) string {
	parts := []string{untrusted.Label(s.SessionID)}
	if cwd := untrusted.Label(s.Cwd); cwd != "" {
		parts = append(parts, cwd)
	}
	if g := untrusted.Label(s.GitRoot); g != "" {
		parts = append(parts, "git:"+g)
	}
	if sum := untrusted.Summary(s.Summary); sum != "" {
		parts = append(parts, `"`+sum+`"`)
	}
	// Labels are already free of control and format characters; Inert
	// also breaks any spelling of interlink's block tags in them.
	return render.Inert(strings.Join(parts, " · "))
}

// sessionList lists sessions for an error message, one per line.
func sessionList(entries []relay.Entry) string {
	lines := make([]string, len(entries))
	for i, e := range entries {
		lines[i] = "  " + sessionLine(e.Session)
		if !e.Live {
			lines[i] += fmt.Sprintf(" (away, last seen %s)", Ago(e.AgeMS))
		}
	}
	return strings.Join(lines, "\n")
}

func (a *Agent) discover(ctx context.Context, args args) (string, error) {
	filter, err := args.str("peer", false)
	if err != nil {
		return "", err
	}
	ros := relay.FetchRoster(ctx, a.relays)
	if ros.Available == 0 {
		return "", &toolFailure{text: "Discovery unavailable: no relay returned a valid roster.\n" +
			strings.Join(ros.Failures, "\n")}
	}
	warning := ""
	if len(ros.Failures) > 0 {
		warning = "\n\nWarning: some relays failed, so results may be incomplete:\n" + strings.Join(ros.Failures, "\n")
	}
	p, err := a.peers.Load()
	if err != nil {
		return "", localState(err)
	}
	groups := ros.Groups()
	if f := trim(filter); f != "" {
		roster := make([]policy.RosterEntry, 0, len(ros.Entries))
		for _, e := range ros.Entries {
			roster = append(roster, policy.RosterEntry{Key: e.Key, Name: untrusted.Name(e.Name)})
		}
		key, _, err := p.ResolvePeer(f, roster)
		if err != nil {
			var amb *policy.AmbiguousError
			if errors.Is(err, policy.ErrUnknownPeer) && !errors.As(err, &amb) {
				return "", invalidf("no node matching %q on the roster; run discover without peer%s", f, warning)
			}
			return "", invalidf("%v%s", err, warning)
		}
		kept := groups[:0]
		for _, g := range groups {
			if g.Key == key {
				kept = append(kept, g)
			}
		}
		groups = kept
	}
	if len(groups) == 0 {
		return "no matching nodes on the roster" + warning, nil
	}
	names := map[string]int{}
	for _, g := range groups {
		names[untrusted.Name(g.Name)]++
	}
	blocks := make([]string, len(groups))
	for i, g := range groups {
		name := untrusted.Name(g.Name)
		var tags []string
		if g.Key == a.own {
			tags = append(tags, "you")
		} else if pet, ok := p.Petname(g.Key); ok {
			tags = append(tags, "already a peer as "+untrusted.Quote(pet))
		}
		if names[name] > 1 {
			tags = append(tags, "name shared — verify fingerprint")
		}
		var b strings.Builder
		if name == "" || name == g.Key.Fingerprint() {
			// No name, or the default one: the fingerprint stands for it.
			fmt.Fprintf(&b, "%s…", g.Key.Fingerprint())
		} else {
			fmt.Fprintf(&b, "%s (%s…), name unverified", untrusted.Quote(name), g.Key.Fingerprint())
		}
		if len(tags) > 0 {
			fmt.Fprintf(&b, "  [%s]", strings.Join(tags, ", "))
		}
		fmt.Fprintf(&b, "\n    key: %s", g.Key)
		for _, s := range g.Sessions {
			fmt.Fprintf(&b, "\n    → %s", sessionLine(s.Session))
			switch {
			case g.Key == a.own && a.isReady() && s.Session.SessionID == a.session:
				b.WriteString("  ← this session")
			case !s.Live:
				fmt.Fprintf(&b, "  (away · last seen %s)", Ago(s.AgeMS))
			}
		}
		blocks[i] = b.String()
	}
	return strings.Join(blocks, "\n") + warning, nil
}

func (a *Agent) setSummary(_ context.Context, args args) (string, error) {
	s, err := args.str("summary", true)
	if err != nil {
		return "", err
	}
	if !a.isReady() {
		s = trim(s)
		if utf8.RuneCountInString(s) > presence.SummaryLimit {
			return "", invalidf("summary too long: at most %d characters", presence.SummaryLimit)
		}
		a.mu.Lock()
		a.pendingSummary = s
		a.mu.Unlock()
		return fmt.Sprintf("summary set to %s; it is announced once this Codex session is bound to its thread",
			untrusted.Quote(s)), nil
	}
	if err := a.announcer.SetSummary(s); err != nil {
		if errors.Is(err, presence.ErrSummaryTooLong) {
			return "", invalidf("summary too long: at most %d characters", presence.SummaryLimit)
		}
		return "", err
	}
	// The announcement goes out in the background; say so rather than
	// claim the relays have it.
	return fmt.Sprintf("summary of session %s set to %s; it is being announced to the relays and shows in discover once a relay has it",
		a.session, untrusted.Quote(a.announcer.Info().Summary)), nil
}

func (a *Agent) getMySessionID(context.Context, args) (string, error) {
	if err := a.requireReady(); err != nil {
		return "", err
	}
	return fmt.Sprintf(`{"session_id":%q}`, a.session), nil
}
