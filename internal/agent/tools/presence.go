package tools

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/lookalike"
	"github.com/interlink-go/interlink/internal/policy"
	"github.com/interlink-go/interlink/internal/presence"
	"github.com/interlink-go/interlink/internal/relay"
	"github.com/interlink-go/interlink/internal/untrusted"
)

// Presence is the tools about sessions and the roster: discover,
// set_summary and get_my_session_id.
type Presence struct {
	// Peers is peers.json, to mark the identities that are peers already.
	Peers *policy.Store
	// Relays are the buses whose rosters discover lists.
	Relays []*relay.Client
	// Own is this identity's key.
	Own identity.PublicKey
	// SetSummary sets the summary the session announces, at once when it
	// is bound (then boundID is its id), else from the moment it is bound
	// (see [session.Binding.SetSummary]).
	SetSummary func(summary string) (kept, boundID string, err error)
	// Session gives what the tools use of the bound session.
	Session Scope[PresenceSession]
}

// PresenceSession is what the presence tools use of the bound session.
type PresenceSession struct {
	// ID is the session id.
	ID string
}

// Tools returns discover, set_summary and get_my_session_id.
func (p *Presence) Tools() []Tool {
	return []Tool{
		Anytime(mcp.NewTool("discover",
			mcp.WithDescription("The roster of every relay, grouped by identity, with each session's id, working folder, git repository "+
				"and summary. The session id is what send_message takes. peer narrows the list (petname, announced name, fingerprint or key). "+
				"Existing peers are marked. Announced names are claims: check the fingerprint before pairing."),
			mcp.WithString("peer", mcp.Description("Show only this identity.")),
		), p.Session, p.discover),
		Anytime(mcp.NewTool("set_summary",
			mcp.WithDescription("Set a short line (at most 200 characters) about what this session is doing, so peers can pick it. "+
				"Working folder and git repository are announced already, and the session is on the roster without a summary."),
			mcp.WithString("summary", mcp.Required(), mcp.Description("The summary; empty clears it.")),
		), p.Session, p.setSummary),
		Bound(mcp.NewTool("get_my_session_id",
			mcp.WithDescription("This session's id, as others see it in discover."),
		), p.Session, p.getMySessionID),
	}
}

type discoverArgs struct {
	Peer string `json:"peer"`
}

func (p *Presence) discover(ctx context.Context, s *PresenceSession, a discoverArgs) (string, error) {
	ros := relay.FetchRoster(ctx, p.Relays)
	if ros.Available == 0 {
		return "", &toolFailure{text: "Discovery unavailable: no relay returned a valid roster.\n" +
			strings.Join(ros.Failures, "\n")}
	}
	warning := ""
	if len(ros.Failures) > 0 {
		warning = "\n\nWarning: some relays failed, so results may be incomplete:\n" + strings.Join(ros.Failures, "\n")
	}
	pol, err := p.Peers.Load()
	if err != nil {
		return "", localState(err)
	}
	groups := ros.Groups()
	if f := trim(a.Peer); f != "" {
		key, _, err := pol.ResolvePeer(f, rosterEntries(ros))
		if err != nil {
			if _, amb := errors.AsType[*policy.AmbiguousError](err); errors.Is(err, policy.ErrUnknownPeer) && !amb {
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
	// Announced names are compared as a reader sees them: two identities
	// whose names read alike (lookalike.Readings) share a name, and an
	// identity whose name reads like a petname of another key imitates
	// that peer.
	byReading := map[string][]identity.PublicKey{}
	for _, g := range groups {
		for _, r := range lookalike.Readings(untrusted.Name(g.Name)) {
			if !slices.Contains(byReading[r], g.Key) {
				byReading[r] = append(byReading[r], g.Key)
			}
		}
	}
	petnames := map[string]policy.Entry{}
	for _, e := range pol.Entries() {
		for _, r := range lookalike.Readings(e.Name) {
			if _, ok := petnames[r]; !ok {
				petnames[r] = e
			}
		}
	}
	blocks := make([]string, len(groups))
	for i, g := range groups {
		var shared bool
		var imitated *policy.Entry
		name := untrusted.Name(g.Name)
		if name != "" && name != g.Key.Fingerprint() {
			for _, r := range lookalike.Readings(name) {
				shared = shared || len(byReading[r]) > 1
				if e, ok := petnames[r]; ok && e.Key != g.Key && imitated == nil {
					imitated = &e
				}
			}
		}
		blocks[i] = p.identityBlock(g, pol, s, shared, imitated)
	}
	return discoverLegend + "\n" + strings.Join(blocks, "\n") + warning, nil
}

// discoverLegend heads every listing: what in it is claimed and what is
// interlink's.
const discoverLegend = "Names, session ids, folders, git labels and summaries are each identity's own unverified claims, " +
	"quoted unless plain; the [bracketed] marks at the start of a line are interlink's."

// identityBlock describes one identity of the roster and its sessions.
// shared reports that another identity announced a name that reads alike;
// imitated, when not nil, is a peer of another key whose petname the
// announced name reads like.
//
// Interlink's marks come first on each line, in brackets, and everything
// the identity announced comes after them, quoted or plain ([claim]), so no
// announcement can put words where the marks stand.
func (p *Presence) identityBlock(g relay.Group, pol *policy.Policy, s *PresenceSession, shared bool, imitated *policy.Entry) string {
	name := untrusted.Name(g.Name)
	var tags []string
	if g.Key == p.Own {
		tags = append(tags, "you")
	} else if pet, ok := pol.Petname(g.Key); ok {
		tags = append(tags, "already a peer as "+untrusted.Quote(pet))
	}
	if imitated != nil {
		tags = append(tags, fmt.Sprintf("name reads like your peer %s (%s…) — not that peer",
			untrusted.Quote(imitated.Name), imitated.Key.Fingerprint()))
	}
	if shared {
		tags = append(tags, "name shared — verify fingerprint")
	}
	var b strings.Builder
	if len(tags) > 0 {
		fmt.Fprintf(&b, "[%s] ", strings.Join(tags, ", "))
	}
	if name == "" || name == g.Key.Fingerprint() {
		// No name, or the default one: the fingerprint stands for it.
		fmt.Fprintf(&b, "%s…", g.Key.Fingerprint())
	} else {
		fmt.Fprintf(&b, "%s (%s…), name unverified", untrusted.Quote(name), g.Key.Fingerprint())
	}
	fmt.Fprintf(&b, "\n    key: %s", g.Key)
	for _, e := range g.Sessions {
		b.WriteString("\n    → ")
		switch {
		case g.Key == p.Own && s != nil && e.Session.SessionID == s.ID:
			b.WriteString("[this session] ")
		case !e.Live:
			fmt.Fprintf(&b, "[away · last seen %s] ", ago(e.AgeMS))
		}
		b.WriteString(sessionLine(e.Session))
	}
	return b.String()
}

type summaryArgs struct {
	Summary string `json:"summary"`
}

// setSummary works before binding too: the summary is announced once the
// session is bound.
func (p *Presence) setSummary(_ context.Context, _ *PresenceSession, a summaryArgs) (string, error) {
	kept, id, err := p.SetSummary(a.Summary)
	if errors.Is(err, presence.ErrSummaryTooLong) {
		return "", invalidf("summary too long: at most %d characters", presence.SummaryLimit)
	}
	if err != nil {
		return "", err
	}
	if id == "" {
		return fmt.Sprintf("summary set to %s; it is announced once this Codex session is bound to its thread",
			untrusted.Quote(kept)), nil
	}
	// The announcement goes out in the background; say so rather than
	// claim the relays have it.
	return fmt.Sprintf("summary of session %s set to %s; it is being announced to the relays and shows in discover once a relay has it",
		id, untrusted.Quote(kept)), nil
}

func (p *Presence) getMySessionID(_ context.Context, s *PresenceSession, _ none) (string, error) {
	return fmt.Sprintf(`{"session_id":%q}`, s.ID), nil
}
