package pairing

import (
	"errors"
	"fmt"
	"time"

	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/route"
	"github.com/interlink-go/interlink/internal/untrusted"
)

// InboundFromKnock builds the inbound request for a knock m whose signature
// the trust gate has verified as sender's.
//
// The knock's reply_to is unsigned, so it is used only when it names a
// session of sender itself: its key part must be exactly sender's key text
// and its session must pass [route.ValidateSession] (the confirmation will be
// posted to that route). Otherwise the knock is discarded with
// [ErrNoReplyRoute]: the confirmation must return to the exact session that
// asked, never to a bare-key inbox or to anyone else, and with such a check
// a relay that rewrites the hint can at most pick another session of the
// same requester.
//
// The claimed name (the knock's text) is cleaned and bounded with
// [untrusted.Name]; it is stored and matched in that form. It stays
// unverified: show it quoted, labelled as such, and never as an instruction.
func InboundFromKnock(sender identity.PublicKey, m *identity.Message) (Request, error) {
	key := sender.String()
	if m.ReplyTo == "" {
		return Request{}, fmt.Errorf("%w: knock from %s has none", ErrNoReplyRoute, key)
	}
	r := route.Parse(m.ReplyTo)
	if r.Bare() || r.Key != key {
		return Request{}, fmt.Errorf("%w: knock from %s names another key or no session", ErrNoReplyRoute, key)
	}
	if err := route.ValidateSession(r.Session); err != nil {
		return Request{}, fmt.Errorf("%w: knock from %s: %w", ErrNoReplyRoute, key, err)
	}
	// The request id comes back as the confirmation's in_reply_to, where an
	// empty value means none; such a knock could never be accepted.
	if m.MsgID == "" {
		return Request{}, fmt.Errorf("pairing: knock from %s has an empty msg_id", key)
	}
	return Request{
		Key:       key,
		Name:      untrusted.Name(m.Text),
		RequestID: m.MsgID,
		ReplyTo:   r.String(),
	}, nil
}

// RequestMessage signs the knock to send to target: a pair_request whose
// text is claimedName (this side's roster name), whose msg_id is requestID
// (the id the acceptance will carry back), and whose reply_to is ownRoute,
// the exact session the acceptance must come back to. The message is
// addressed to the bare target key, and the job's route is targetRoute,
// which must name one session of target: a knock goes to one session the
// operator can see, never to a bare-key inbox.
func RequestMessage(s *identity.Signer, target identity.PublicKey, targetRoute route.Route,
	claimedName, requestID string, ownRoute route.Route, now time.Time) (Job, error) {
	if targetRoute.Bare() || targetRoute.Key != target.String() {
		return Job{}, fmt.Errorf("%w: knock route %q does not name a session of %s", ErrBadRoute, targetRoute.String(), target)
	}
	if err := checkOwnRoute(s, ownRoute); err != nil {
		return Job{}, err
	}
	if requestID == "" {
		return Job{}, errors.New("pairing: knock: empty request id")
	}
	m := identity.Message{
		To:      target.String(),
		Text:    claimedName,
		TS:      identity.Millis(now),
		MsgID:   requestID,
		Kind:    identity.KindPairRequest,
		ReplyTo: ownRoute.String(),
	}
	if err := s.SignMessage(&m); err != nil {
		return Job{}, fmt.Errorf("pairing: knock: %w", err)
	}
	return Job{Route: targetRoute.String(), Msg: m}, nil
}

// AcceptMessage signs the confirmation of the inbound request req: a
// pair_accept to req.Key whose text is claimedName (this side's roster
// name), whose msg_id is the fresh msgID, whose in_reply_to is the request
// id, and whose reply_to is ownRoute. The job's route is req.ReplyTo, the
// session that knocked; a request whose reply route is bare or belongs to
// another key is refused with [ErrBadRoute].
func AcceptMessage(s *identity.Signer, req Request, claimedName string, ownRoute route.Route,
	now time.Time, msgID string) (Job, error) {
	r := route.Parse(req.ReplyTo)
	if r.Bare() || r.Key != req.Key {
		return Job{}, fmt.Errorf("%w: reply route %q does not name a session of %s", ErrBadRoute, req.ReplyTo, req.Key)
	}
	if err := checkOwnRoute(s, ownRoute); err != nil {
		return Job{}, err
	}
	// An empty in_reply_to would match any outstanding request of ours on
	// the other side (the compatibility rule), so never send one.
	if req.RequestID == "" || msgID == "" {
		return Job{}, errors.New("pairing: confirmation: empty request id or msg_id")
	}
	m := identity.Message{
		To:        req.Key,
		Text:      claimedName,
		TS:        identity.Millis(now),
		MsgID:     msgID,
		Kind:      identity.KindPairAccept,
		InReplyTo: req.RequestID,
		ReplyTo:   ownRoute.String(),
	}
	if err := s.SignMessage(&m); err != nil {
		return Job{}, fmt.Errorf("pairing: confirmation: %w", err)
	}
	return Job{Route: req.ReplyTo, Msg: m}, nil
}

// checkOwnRoute requires ownRoute to name a session of the signer's key:
// the other side sends its answer there.
func checkOwnRoute(s *identity.Signer, ownRoute route.Route) error {
	if ownRoute.Bare() || ownRoute.Key != s.Public().String() {
		return fmt.Errorf("%w: own route %q does not name a session of the own key", ErrBadRoute, ownRoute.String())
	}
	return nil
}

// checkJob reports, with an error wrapping [ErrBadJob], a queued job this
// side would not have queued: its message does not verify, is not signed
// by own, is not a pairing kind, or its route does not name a session of
// the recipient. The outbox signs a message again when it is old, so such
// a job must never reach it.
func checkJob(job Job, own identity.PublicKey) error {
	signer, err := job.Msg.Verify()
	if err != nil {
		return fmt.Errorf("%w %q: %w", ErrBadJob, job.Msg.MsgID, err)
	}
	if signer != own {
		return fmt.Errorf("%w %q: signed by %s, not the own key", ErrBadJob, job.Msg.MsgID, signer)
	}
	if !job.Msg.Kind.Pairing() {
		return fmt.Errorf("%w %q: kind %q is not a pairing kind", ErrBadJob, job.Msg.MsgID, job.Msg.Kind)
	}
	if r := route.Parse(job.Route); r.Bare() || r.Key != job.Msg.To {
		return fmt.Errorf("%w %q: route %q does not name a session of the recipient", ErrBadJob, job.Msg.MsgID, job.Route)
	}
	return nil
}
