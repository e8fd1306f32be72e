package agent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/pairing"
	"github.com/interlink-go/interlink/internal/policy"
	"github.com/interlink-go/interlink/internal/relay"
	"github.com/interlink-go/interlink/internal/route"
	"github.com/interlink-go/interlink/internal/untrusted"
)

// Pairing and the peer list decide who may talk to this session. The tools
// that change them act for the operator: their descriptions say so, and
// none of them is ever justified by what a peer wrote.

func (a *Agent) requestPair(ctx context.Context, args args) (string, error) {
	if err := a.requireReady(); err != nil {
		return "", err
	}
	target, err := args.str("target", true)
	if err != nil {
		return "", err
	}
	target = trim(target)
	if target == "" {
		return "", invalidf("target must not be empty")
	}
	// The target becomes the peer's petname here once the other side
	// accepts; refusing a name now beats a pairing that cannot complete.
	if pe, ok := errors.AsType[*policy.PetnameError](policy.CheckPetname(target)); ok {
		return "", invalidf("%q cannot become a petname (%s); use the 8-character fingerprint or the full key from discover instead",
			target, pe.Reason)
	}
	ros := relay.FetchRoster(ctx, a.relays)
	if ros.Available == 0 {
		return "", invalidf("Discovery unavailable: no relay returned a valid roster, so %q cannot be found:\n%s",
			target, strings.Join(ros.Failures, "\n"))
	}
	entries := make([]policy.RosterEntry, 0, len(ros.Entries))
	for _, e := range ros.Entries {
		entries = append(entries, policy.RosterEntry{Key: e.Key, Name: untrusted.Name(e.Name)})
	}
	key, err := policy.ResolveRoster(target, entries)
	if err != nil {
		var amb *policy.AmbiguousError
		switch {
		case errors.As(err, &amb):
			return "", invalidf("%q is ambiguous on the roster; give the fingerprint or the full key: %v", target, amb)
		case errors.Is(err, policy.ErrUnknownPeer):
			return "", invalidf("no node %q on the roster; run discover to see who is there", target)
		}
		return "", invalidf("%q: %v", target, err)
	}
	if key == a.own {
		return "", invalidf("%q is this identity; other sessions of it need no pairing (use to='self')", target)
	}
	// The first live session of the target, else its first session.
	session := ""
	for _, e := range ros.Entries {
		if e.Key != key || e.Session.SessionID == "" {
			continue
		}
		if e.Live {
			session = e.Session.SessionID
			break
		}
		if session == "" {
			session = e.Session.SessionID
		}
	}
	if session == "" {
		return "", invalidf("%s (%s…) has no session to knock at; it may be offline", target, key.Fingerprint())
	}
	reqID, err := identity.NewMsgID(nil)
	if err != nil {
		return "", err
	}
	targetRoute := route.New(key.String(), session)
	req := pairing.Request{Key: key.String(), Name: target, RequestID: reqID, ReplyTo: targetRoute.String()}
	stored, err := a.pairing.Request(req, func(id string) (pairing.Job, error) {
		return pairing.RequestMessage(a.signer, key, targetRoute, a.name, id, a.route, a.now())
	})
	if err != nil {
		return "", localState(err)
	}
	a.kickPairing()
	return fmt.Sprintf("Pairing request to %s (%s…, session %s) queued (request id %s); it is retried until a relay takes it. "+
		"Once they accept, %s becomes a peer under the petname %q and send_message to it works.",
		target, key.Fingerprint(), untrusted.Label(session), stored.RequestID, target, target), nil
}

func (a *Agent) listPairRequests(context.Context, args) (string, error) {
	if !a.isReady() {
		return "no pending pairing requests (this Codex session is not bound to a thread yet)", nil
	}
	st, err := a.pairing.Load()
	if err != nil {
		return "", localState(err)
	}
	if len(st.Inbound) == 0 {
		return "no pending pairing requests", nil
	}
	lines := make([]string, 0, len(st.Inbound))
	for _, r := range st.Inbound {
		lines = append(lines, fmt.Sprintf("%s (%s…), claimed name, unverified\n    key: %s",
			untrusted.Quote(untrusted.Name(r.Name)), identity.Fingerprint(r.Key), r.Key))
	}
	return strings.Join(lines, "\n"), nil
}

// findRequest finds a pending inbound request by fingerprint or key.
func (a *Agent) findRequest(fp string) (pairing.Request, bool, error) {
	req, err := a.pairing.Find(trim(fp))
	switch {
	case err == nil:
		return req, true, nil
	case errors.Is(err, pairing.ErrNotFound):
		return pairing.Request{}, false, nil
	case errors.Is(err, pairing.ErrAmbiguous):
		return pairing.Request{}, false, localState(errors.New("ambiguous fingerprint; use the full key"))
	}
	return pairing.Request{}, false, localState(err)
}

func (a *Agent) acceptPair(_ context.Context, args args) (string, error) {
	if err := a.requireReady(); err != nil {
		return "", err
	}
	fp, err := args.str("fingerprint", true)
	if err != nil {
		return "", err
	}
	req, ok, err := a.findRequest(fp)
	if err != nil {
		return "", err
	}
	if !ok {
		return "", invalidf("no pending request from %q; see list_pair_requests", fp)
	}
	key, err := identity.ParsePublicKey(req.Key)
	if err != nil {
		return "", localState(err)
	}
	msgID, err := identity.NewMsgID(nil)
	if err != nil {
		return "", err
	}
	job, err := pairing.AcceptMessage(a.signer, req, a.name, a.route, a.now(), msgID)
	if err != nil {
		return "", localState(err)
	}
	var petname string
	err = a.pairing.Accept(req, job, func() error {
		var err error
		petname, err = a.peers.AddAccepted(req.Name, key)
		return err
	})
	var pend *pairing.ConfirmationPendingError
	switch {
	case errors.As(err, &pend):
		return "", &toolFailure{text: fmt.Sprintf("%s (key %s) is now trusted locally, but the confirmation could not be stored (%v), "+
			"so the pairing may be half done. Repair the storage, look at list_pair_requests and call accept_pair again for %s; "+
			"repeating it is safe.", petname, key, pend.Err, key)}
	case err != nil:
		return "", localState(err)
	}
	a.kickPairing()
	return fmt.Sprintf("%s (%s…) accepted locally and listed as peer %q. A confirmation is queued for the session that asked "+
		"and retried until a relay takes it.", petname, key.Fingerprint(), petname), nil
}

func (a *Agent) rejectPair(_ context.Context, args args) (string, error) {
	fp, err := args.str("fingerprint", true)
	if err != nil {
		return "", err
	}
	if !a.isReady() {
		return fmt.Sprintf("no pending request from %q; nothing to reject", fp), nil
	}
	req, ok, err := a.findRequest(fp)
	if err != nil {
		return "", err
	}
	if !ok {
		return fmt.Sprintf("no pending request from %q; nothing to reject", fp), nil
	}
	if _, err := a.pairing.Reject(req.Key); err != nil {
		return "", localState(err)
	}
	return fmt.Sprintf("rejected the pairing request from %s (%s…); nothing was sent to it",
		untrusted.Quote(untrusted.Name(req.Name)), identity.Fingerprint(req.Key)), nil
}

func (a *Agent) listPeers(context.Context, args) (string, error) {
	p, err := a.peers.Load()
	if err != nil {
		return "", localState(err)
	}
	entries := p.Entries()
	if len(entries) == 0 {
		return "no peers authorized", nil
	}
	slices.SortFunc(entries, func(x, y policy.Entry) int { return strings.Compare(x.Name, y.Name) })
	lines := make([]string, len(entries))
	for i, e := range entries {
		lines[i] = fmt.Sprintf("%s → %s", e.Name, e.Key)
	}
	return strings.Join(lines, "\n"), nil
}

// peersError wraps a failed change of peers.json.
func peersError(err error) error {
	return fmt.Errorf("updating peers: %w", err)
}

func (a *Agent) addPeer(_ context.Context, args args) (string, error) {
	name, err := args.str("petname", true)
	if err != nil {
		return "", err
	}
	keyText, err := args.str("key", true)
	if err != nil {
		return "", err
	}
	key, err := identity.ParsePublicKey(trim(keyText))
	if err != nil {
		return "", peersError(fmt.Errorf("invalid key: %w", err))
	}
	if err := a.peers.Add(name, key); err != nil {
		return "", peersError(err)
	}
	return fmt.Sprintf("%s (%s…) is now an authorized chat peer", name, key.Fingerprint()), nil
}

func (a *Agent) removePeer(_ context.Context, args args) (string, error) {
	name, err := args.str("petname", true)
	if err != nil {
		return "", err
	}
	ok, err := a.peers.Remove(name)
	if err != nil {
		return "", peersError(err)
	}
	if !ok {
		return fmt.Sprintf("no peer named %q; nothing changed", name), nil
	}
	return fmt.Sprintf("revoked %s: its messages are dropped from now on", name), nil
}
