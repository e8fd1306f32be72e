package inbound

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/interlink-go/interlink/internal/gate"
	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/mailbox"
	"github.com/interlink-go/interlink/internal/pairing"
	"github.com/interlink-go/interlink/internal/policy"
	"github.com/interlink-go/interlink/internal/relay"
	"github.com/interlink-go/interlink/internal/route"
	"github.com/interlink-go/interlink/internal/seal"
)

// pendingCommit is an admitted message whose local commit has not finished.
type pendingCommit struct {
	payload []byte // the delivery's payload, as the relay hands it back
	d       gate.Decision

	// For a pair_accept, the steps already done: the outbound request it
	// answers was found, and the operator has been told the outcome (after
	// which only retiring the request remains).
	req      pairing.Request
	found    bool
	notified bool

	// For a knock: the rate limits let it through, so a retry after a
	// failed write does not count it again.
	allowed bool
}

// Handle processes one delivery from the relay and reports whether the relay
// may forget it (ack). A nil error with ack false happens only for a delivery
// without a message.
//
// In order:
//   - a message without a payload is acknowledged;
//   - a payload that is not a signed message is opened as a sealed one
//     (see package seal): its envelope's signature, its recipient, its
//     decryption, its inner signature and the match between the two are
//     checked in that order, and a failure is logged and counted with
//     reason "sealed_" and the step's name ([seal.Reason]), and
//     acknowledged. What opens goes on as a plaintext message would,
//     from the next step;
//   - a payload that is neither, or whose msg_id is longer
//     than [identity.MaxReceivedMsgID], is logged with reason "undecodable"
//     and acknowledged;
//   - loopback guard: a message from the own key whose reply_to names this
//     very session is our own message come back, and is acknowledged
//     silently. The check runs before verification because it needs none:
//     the worst a forger achieves is that we drop its message;
//   - peers.json is read again; if that fails, Handle returns the error
//     without ack, so the message stays on the relay;
//   - the gate decides. A rejection is logged with its reason and the
//     sender's fingerprint, never the body, and acknowledged;
//   - the admitted message is committed: a delivery to the mailbox (then the
//     sticky session is updated; a message over its sender's share of the
//     mailbox is logged with reason "over_share" and acknowledged), a knock to the pairing store (then the
//     operator is notified), an acceptance to the peer policy and the
//     pairing store (see the package documentation). A failed store returns
//     the error without ack; when the relay hands the same payload back,
//     Handle resumes the commit without asking the gate again.
func (l *Loop) Handle(ctx context.Context, d relay.Delivery) (ack bool, err error) {
	if !d.HasMessage {
		return false, nil
	}
	if d.Payload == nil {
		return true, nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()

	if p := l.pending; p != nil && bytes.Equal(p.payload, d.Payload) {
		ack, err := l.commit(ctx, p)
		if err == nil {
			l.pending = nil
		}
		return ack, err
	}
	// The remembered message, if any, is no longer at the head of the
	// queue (the relay dropped it), so there is nothing to resume.
	l.pending = nil

	m, err := identity.DecodeMessage(d.Payload)
	sealed := false
	if err != nil {
		if m, err = l.open(d.Payload); err != nil {
			reason := "undecodable"
			if !errors.Is(err, errNotSealed) {
				reason = "sealed_" + seal.Reason(err)
			}
			l.log.Info("message dropped", "reason", reason, "bytes", len(d.Payload), "err", err)
			l.cfg.Dropped(&identity.Message{}, reason)
			return true, nil
		}
		sealed = true
	}
	if len(m.MsgID) > identity.MaxReceivedMsgID {
		l.log.Info("message dropped", "reason", "undecodable", "bytes", len(d.Payload),
			"msg_id_bytes", len(m.MsgID), "sender", identity.Fingerprint(m.From))
		l.cfg.Dropped(&identity.Message{}, "undecodable")
		return true, nil
	}
	if l.loopback(&m) {
		return true, nil
	}
	peers, err := l.cfg.Peers.Load()
	if err != nil {
		return false, fmt.Errorf("inbound: read peer policy: %w", err)
	}
	dec, err := l.cfg.Gate.Decide(&m, peers)
	if err != nil {
		l.log.Info("message dropped", "reason", gate.Reason(err), "sender", identity.Fingerprint(m.From),
			"msg_id", m.MsgID, "err", err)
		l.cfg.Dropped(&m, gate.Reason(err))
		return true, nil
	}
	if sealed {
		// The sender proved, by a signature of its own, that it seals;
		// replies to it are sealed from now on.
		l.cfg.SealedFrom(dec.Sender, m.TS)
	}
	p := &pendingCommit{payload: bytes.Clone(d.Payload), d: dec}
	ack, err = l.commit(ctx, p)
	if err != nil {
		l.pending = p
	}
	return ack, err
}

// errNotSealed: a payload that is neither a message nor a sealed one.
var errNotSealed = errors.New("inbound: not a sealed message")

// open opens payload, which did not decode as a message, as a sealed
// message addressed to this identity ([seal.OpenMessage]): the envelope's
// signature is checked before anything is decrypted, and the inner
// message's signature before it is returned. A payload without a "sealed"
// member, or any payload when Config.Recipient is nil, is errNotSealed.
func (l *Loop) open(payload []byte) (identity.Message, error) {
	if l.cfg.Recipient == nil {
		return identity.Message{}, errNotSealed
	}
	m, err := seal.OpenMessage(l.cfg.Recipient, payload)
	if errors.Is(err, seal.ErrMalformed) && !hasMember(payload, "sealed") {
		return identity.Message{}, errNotSealed
	}
	return m, err
}

// hasMember reports whether payload is a JSON object with a member name.
func hasMember(payload []byte, name string) bool {
	var f map[string]json.RawMessage
	if json.Unmarshal(payload, &f) != nil {
		return false
	}
	_, ok := f[name]
	return ok
}

// loopback reports whether m is one of our own messages come back to the
// session that sent it: from the own key, with a reply_to naming this
// session.
func (l *Loop) loopback(m *identity.Message) bool {
	if m.From != l.cfg.Own.String() || m.ReplyTo == "" {
		return false
	}
	r := route.Parse(m.ReplyTo)
	return !r.Bare() && r.Session == l.cfg.Route.Session
}

// commit carries out the local effect of an admitted message.
func (l *Loop) commit(ctx context.Context, p *pendingCommit) (bool, error) {
	switch p.d.Outcome {
	case gate.Deliver:
		return l.deliver(ctx, p)
	case gate.Knock:
		return l.knock(ctx, p)
	case gate.PairAccept:
		return l.pairAccept(ctx, p)
	case gate.Receipt:
		return l.receipt(ctx, p)
	}
	// Unreachable: the gate has no other outcome.
	l.log.Error("message dropped", "reason", "unknown_outcome", "outcome", p.d.Outcome.String(),
		"msg_id", p.d.Message.MsgID)
	return true, nil
}

// reasonOverShare is the reason logged for a message dropped because its
// sender holds its whole share of the mailbox.
const reasonOverShare = "over_share"

// deliver retains an ordinary message in the mailbox under the sender's
// petname, then remembers the session it came from. A message over its
// sender's share of the mailbox ([mailbox.ErrOverShare]) is dropped and
// acknowledged; any other failure leaves it on the relay.
func (l *Loop) deliver(ctx context.Context, p *pendingCommit) (bool, error) {
	m := &p.d.Message
	added, err := l.cfg.Mailbox.Retain(ctx, *m, p.d.Petname)
	if errors.Is(err, mailbox.ErrOverShare) {
		// The sender holds its whole share of the mailbox. Left on the
		// relay, the message would hold up every message queued behind
		// it, other senders' included, until the relay dropped them; so
		// it is dropped here, and only this sender loses anything.
		l.log.Info("message dropped", "reason", reasonOverShare, "sender", p.d.Sender.Fingerprint(),
			"msg_id", m.MsgID, "peer", p.d.Petname, "err", err)
		l.cfg.Dropped(m, reasonOverShare)
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("inbound: retain %s from %s: %w", m.MsgID, p.d.Sender.Fingerprint(), err)
	}
	// Only a hint naming a session of the signer itself gets here (see
	// gate.UsableReplyTo), so a tampering relay cannot point replies at
	// anyone else.
	if p.d.HasReplyTo() {
		l.cfg.Sticky.Set(p.d.Sender, p.d.ReplyTo.Session)
	}
	l.cfg.Stored(&p.d)
	l.log.Debug("message delivered", "msg_id", m.MsgID, "sender", p.d.Sender.Fingerprint(),
		"peer", p.d.Petname, "duplicate", !added)
	if added {
		l.cfg.Delivered(&p.d)
	}
	return true, nil
}

// receipt hands an end-to-end receipt to Config.Receipt, and logs and
// counts the entries it dropped, each reason once with its count.
func (l *Loop) receipt(ctx context.Context, p *pendingCommit) (bool, error) {
	m := &p.d.Message
	if l.cfg.Receipt == nil {
		l.log.Info("message dropped", "reason", gate.Reason(gate.ErrUnexpected), "sender", p.d.Sender.Fingerprint(),
			"msg_id", m.MsgID, "kind", string(m.Kind))
		l.cfg.Dropped(m, gate.Reason(gate.ErrUnexpected))
		return true, nil
	}
	drops, err := l.cfg.Receipt(ctx, &p.d)
	if err != nil {
		return false, fmt.Errorf("inbound: receipt %s from %s: %w", m.MsgID, p.d.Sender.Fingerprint(), err)
	}
	for _, reason := range slices.Sorted(maps.Keys(drops)) {
		l.log.Info("receipt entries dropped", "reason", reason, "count", drops[reason],
			"sender", p.d.Sender.Fingerprint(), "msg_id", m.MsgID)
		l.cfg.Dropped(m, reason)
	}
	return true, nil
}

// knock stores a stranger's pairing request and tells the operator, once
// per pending request.
//
// A knock that cannot be answered is discarded first, at no cost. Then the
// rate limits apply (see [Knocks]): a key knocking again within moments is
// dropped silently, and a knock over the limit for all keys is dropped and
// counted. The pairing store then either records a new request, which the
// operator is told about, refreshes the pending request of the same key,
// which adds no notice, or refuses a new key because its list of pending
// requests is full, which is counted too. Counted drops reach the operator
// as one notice with the count (see [Loop.reportDropped]).
func (l *Loop) knock(ctx context.Context, p *pendingCommit) (bool, error) {
	m := &p.d.Message
	fp := p.d.Sender.Fingerprint()
	req, err := pairing.InboundFromKnock(p.d.Sender, m)
	if err != nil {
		// Without a route back to the asking session the request could
		// never be confirmed; keeping it would only mislead the operator.
		reason := "unusable_knock"
		if errors.Is(err, pairing.ErrNoReplyRoute) {
			reason = "no_reply_route"
		}
		l.log.Info("pairing request discarded", "reason", reason, "sender", fp, "msg_id", m.MsgID, "err", err)
		return true, nil
	}
	if !p.allowed {
		switch l.cfg.Knocks.allow(p.d.Sender) {
		case knockKeyLimited:
			l.log.Debug("pairing request dropped", "reason", "key_rate_limited", "sender", fp, "msg_id", m.MsgID)
			return true, nil
		case knockLimited:
			l.log.Debug("pairing request dropped", "reason", "rate_limited", "sender", fp, "msg_id", m.MsgID)
			l.reportDropped(ctx)
			return true, nil
		}
		p.allowed = true
	}
	added, err := l.cfg.Pairing.Receive(req)
	switch {
	case errors.Is(err, pairing.ErrInboundFull):
		l.cfg.Knocks.full()
		l.log.Debug("pairing request dropped", "reason", "pending_list_full", "sender", fp, "msg_id", m.MsgID)
		l.reportDropped(ctx)
		return true, nil
	case err != nil:
		return false, fmt.Errorf("inbound: store pairing request from %s: %w", fp, err)
	case !added:
		l.log.Debug("pairing request refreshed", "sender", fp, "msg_id", m.MsgID)
		return true, nil
	}
	l.log.Info("pairing request received", "sender", fp, "msg_id", m.MsgID)
	l.notify(ctx, knockNotice(p.d.Sender, req, m.MsgID))
	return true, nil
}

// reportDropped tells the operator about knocks turned away, when
// [Knocks] says a notice is due.
func (l *Loop) reportDropped(ctx context.Context) {
	d, ok := l.cfg.Knocks.due()
	if !ok {
		return
	}
	id, err := identity.NewMsgID(nil)
	if err != nil {
		l.log.Warn("pairing requests dropped; no notice id", "full", d.Full, "rate_limited", d.Limited, "err", err)
		return
	}
	l.log.Warn("pairing requests dropped", "full", d.Full, "rate_limited", d.Limited)
	l.notify(ctx, droppedNotice(d, id))
}

// pairAccept completes the outbound request a pairing acceptance answers.
// Each step records its progress in p, so a retry after a failed write
// neither adds the peer twice nor tells the operator twice.
func (l *Loop) pairAccept(ctx context.Context, p *pendingCommit) (bool, error) {
	m := &p.d.Message
	sender := p.d.Sender
	fp := sender.Fingerprint()
	if !p.found {
		req, ok, err := l.cfg.Pairing.PendingAccept(sender.String(), m.InReplyTo)
		if err != nil {
			return false, fmt.Errorf("inbound: look up pairing request to %s: %w", fp, err)
		}
		if !ok {
			// The gate passes acceptances from anyone; only one that
			// answers a request this session sent may change anything.
			l.log.Info("pairing acceptance ignored", "reason", "unsolicited", "sender", fp, "msg_id", m.MsgID)
			return true, nil
		}
		p.req, p.found = req, true
	}
	if !p.notified {
		petname, err := l.cfg.Peers.AddForPairing(p.req.Name, sender)
		switch {
		case err == nil:
			l.log.Info("paired", "sender", fp, "peer", petname, "msg_id", m.MsgID)
			l.notify(ctx, pairedNotice(sender, petname, m.MsgID))
		case errors.Is(err, policy.ErrConflict),
			errors.Is(err, policy.ErrInvalidName),
			errors.Is(err, policy.ErrReservedName):
			// Retrying cannot help: only the operator can free or pick a
			// name. Nothing was changed.
			l.log.Warn("pairing could not complete", "sender", fp, "msg_id", m.MsgID, "err", err)
			l.notify(ctx, conflictNotice(sender, p.req.Name, err, m.MsgID))
		default:
			return false, fmt.Errorf("inbound: add peer %s: %w", fp, err)
		}
		p.notified = true
	}
	if err := l.cfg.Pairing.Complete(p.req.Key, p.req.RequestID); err != nil {
		return false, fmt.Errorf("inbound: retire pairing request to %s: %w", fp, err)
	}
	return true, nil
}

// notify hands n to the host.
func (l *Loop) notify(ctx context.Context, n Notice) {
	l.log.DebugContext(ctx, "pairing notice", "kind", n.Kind, "msg_id", n.MsgID)
	if err := l.cfg.Notify(ctx, n); err != nil {
		l.log.WarnContext(ctx, "pairing notice not shown", "kind", n.Kind, "msg_id", n.MsgID, "err", err)
	}
}
