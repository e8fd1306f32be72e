// Package gate decides what happens to a message that arrived from a bus.
//
// [Gate.Decide] runs the checks in a fixed order and stops at the first that
// fails:
//
//	verify signature -> addressed to me -> authorized kind -> fresh -> not a replay
//
// then dispatches on the kind. The order is part of the security argument:
// nothing that fails an earlier check reaches the replay set, so a stranger's
// chat or a stale copy cannot push genuine ids out of it, and peer lookups
// use only the key the signature authenticated, never the claimed "from"
// text. What does reach the set is kept in shares ([ReplaySet]): one per
// peer and one for the own identity, and one for all strangers' pairing
// messages, so no sender's flood pushes out another's ids.
//
// Every rejection is one of the sentinel errors below, so callers and logs
// can tell the reasons apart ([Reason]).
package gate

import (
	"errors"
	"fmt"
	"time"

	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/protocol"
	"github.com/interlink-go/interlink/internal/route"
)

// Rejection reasons, in the order of the checks.
var (
	// ErrBadSignature: the signature does not verify, or from or to is
	// not a valid key.
	ErrBadSignature = errors.New("gate: bad signature")
	// ErrWrongRecipient: validly signed, but for another identity.
	ErrWrongRecipient = errors.New("gate: wrong recipient")
	// ErrNotAllowlisted: an ordinary message or a receipt from a key that
	// is neither a peer nor our own.
	ErrNotAllowlisted = errors.New("gate: sender not allowlisted")
	// ErrStale: the timestamp is outside the freshness window.
	ErrStale = errors.New("gate: stale timestamp")
	// ErrReplay: this sender's msg_id was already admitted.
	ErrReplay = errors.New("gate: replay")
	// ErrUnexpected: admitted by the checks, but nothing handles it (a
	// pairing request from a peer or from our own key).
	ErrUnexpected = errors.New("gate: unexpected message")
)

// Reason returns the stable log value for a rejection: the sentinel's name
// without "Err", in snake case. Other errors give "error".
func Reason(err error) string {
	for _, r := range []struct {
		err  error
		name string
	}{
		{ErrBadSignature, "bad_signature"},
		{ErrWrongRecipient, "wrong_recipient"},
		{ErrNotAllowlisted, "not_allowlisted"},
		{ErrStale, "stale"},
		{ErrReplay, "replay"},
		{ErrUnexpected, "unexpected"},
	} {
		if errors.Is(err, r.err) {
			return r.name
		}
	}
	return "error"
}

// Outcome is what an admitted message is for.
type Outcome int

// The outcomes of an admitted message.
const (
	// Deliver: an ordinary message from a peer or from our own key; it goes
	// to the mailbox attributed to [Decision.Petname].
	Deliver Outcome = iota + 1
	// Knock: a pairing request from a key that is not a peer. Its text is a
	// claimed name, untrusted; only the operator can act on it.
	Knock
	// PairAccept: a pairing acceptance. It changes something only if it
	// matches a pairing request this session has outstanding; the gate
	// cannot know that, so it passes acceptances from anyone.
	PairAccept
	// Receipt: an end-to-end receipt from a peer or from our own key. It
	// is never delivered; the sender's side checks each of its entries
	// against what this session sent (package e2e).
	Receipt
)

func (o Outcome) String() string {
	switch o {
	case Deliver:
		return "deliver"
	case Knock:
		return "knock"
	case PairAccept:
		return "pair_accept"
	case Receipt:
		return "receipt"
	}
	return fmt.Sprintf("outcome(%d)", int(o))
}

// Peers is the view of the peer policy the gate needs: the petname of an
// authenticated key, if it is listed.
type Peers interface {
	Petname(identity.PublicKey) (string, bool)
}

// Decision describes an admitted message.
type Decision struct {
	Outcome Outcome
	// Sender is the authenticated sender.
	Sender identity.PublicKey
	// Petname is the local name of the sender for a Deliver: its petname,
	// or [protocol.SelfSender]. Empty for a Knock; for a PairAccept, the
	// petname if the sender is already a peer.
	Petname string
	// Message is the message as received. Its empty optional fields mean
	// absent.
	Message identity.Message
	// ReplyTo is the sender's route from the reply_to hint when the hint is
	// usable (see [UsableReplyTo]); the zero Route otherwise.
	ReplyTo route.Route
}

// HasReplyTo reports whether the message carried a usable reply_to hint.
func (d *Decision) HasReplyTo() bool { return d.ReplyTo.Key != "" }

// UsableReplyTo returns the route in m's reply_to hint and true when its key
// part is exactly m's (authenticated) from key and it names a session.
//
// reply_to is not signed: any relay can change it. Using it only when it
// points back at the signer means a tampering relay can at most misroute a
// reply among the sender's own sessions. It never grants anything and never
// changes who a message is attributed to.
func UsableReplyTo(m *identity.Message) (route.Route, bool) {
	if m.ReplyTo == "" {
		return route.Route{}, false
	}
	r := route.Parse(m.ReplyTo)
	if r.Bare() || r.Key != m.From {
		return route.Route{}, false
	}
	return r, true
}

// Options holds optional settings for [New]. The zero value means defaults.
type Options struct {
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// ReplayCap is the capacity of one share of the replay set; 0 means
	// [ReplayCap].
	ReplayCap int
}

// Gate makes trust decisions for one identity. One Gate serves all relay
// loops of a process; it is safe for concurrent use.
type Gate struct {
	me     identity.PublicKey
	now    func() time.Time
	replay *ReplaySet
}

// New returns a gate for the identity me.
func New(me identity.PublicKey, opts *Options) *Gate {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Gate{me: me, now: o.Now, replay: NewReplaySet(o.ReplayCap)}
}

// Decide runs the checks on m against the peer policy snapshot peers, which
// the caller re-reads for every message. It returns the decision for an
// admitted message, or an error wrapping exactly one rejection sentinel.
func (g *Gate) Decide(m *identity.Message, peers Peers) (Decision, error) {
	// 1. Signature, which also parses from and to.
	sender, err := m.Verify()
	if err != nil {
		return Decision{}, fmt.Errorf("%w: %w", ErrBadSignature, err)
	}
	// 2. Addressed to me: byte equality of the decoded keys.
	to, err := identity.ParsePublicKey(m.To)
	if err != nil { // unreachable after Verify; kept for safety
		return Decision{}, fmt.Errorf("%w: %w", ErrBadSignature, err)
	}
	if to != g.me {
		return Decision{}, fmt.Errorf("%w: addressed to %s", ErrWrongRecipient, to.Fingerprint())
	}
	// 3. Authorization of the kind. Pairing kinds from strangers pass: a
	// knock is how a stranger asks, and an acceptance only completes what
	// this side started.
	petname, isPeer := peers.Petname(sender)
	own := sender == g.me
	kind := m.Kind
	if kind == "" {
		kind = identity.KindMessage
	}
	if (kind == identity.KindMessage || kind == identity.KindReceipt) && !isPeer && !own {
		return Decision{}, fmt.Errorf("%w: %s", ErrNotAllowlisted, sender.Fingerprint())
	}
	// 4. Freshness, before the replay set so stale copies use no slot.
	if err := g.fresh(m.TS); err != nil {
		return Decision{}, err
	}
	// 5. Replay. Peers and the own identity each have a share of the set;
	// strangers, who may make up any number of keys, share one, so no
	// sender's messages push out another's (see [ReplaySet]).
	share := strangers
	if isPeer || own {
		share = sender
	}
	if !g.replay.InsertInto(share, sender, m.MsgID) {
		return Decision{}, fmt.Errorf("%w: %s from %s", ErrReplay, m.MsgID, sender.Fingerprint())
	}
	// 6. Dispatch.
	d := Decision{Sender: sender, Message: *m, Petname: petname}
	d.ReplyTo, _ = UsableReplyTo(m)
	switch kind {
	case identity.KindMessage:
		d.Outcome = Deliver
		if !isPeer {
			d.Petname = protocol.SelfSender
		}
	case identity.KindPairRequest:
		if isPeer {
			return Decision{}, fmt.Errorf("%w: pairing request from peer %q", ErrUnexpected, petname)
		}
		if own {
			return Decision{}, fmt.Errorf("%w: pairing request signed by our own key", ErrUnexpected)
		}
		d.Outcome = Knock
	case identity.KindPairAccept:
		d.Outcome = PairAccept
	case identity.KindReceipt:
		d.Outcome = Receipt
		if !isPeer {
			d.Petname = protocol.SelfSender
		}
	default: // unreachable: Verify refuses unknown kinds
		return Decision{}, fmt.Errorf("%w: kind %q", ErrUnexpected, kind)
	}
	return d, nil
}

// fresh checks ts against the window around the gate's clock,
// [protocol.MaxPast] back and [protocol.MaxFuture] ahead, in milliseconds
// with saturating arithmetic. Why the window has these bounds is said where
// they are declared.
func (g *Gate) fresh(ts uint64) error {
	now := identity.Millis(g.now())
	if ts > satAdd(now, uint64(protocol.MaxFuture.Milliseconds())) {
		return fmt.Errorf("%w: %d ms in the future", ErrStale, ts-now)
	}
	if now > satAdd(ts, uint64(protocol.MaxPast.Milliseconds())) {
		return fmt.Errorf("%w: %d ms old", ErrStale, now-ts)
	}
	return nil
}

func satAdd(a, b uint64) uint64 {
	if s := a + b; s >= a {
		return s
	}
	return ^uint64(0)
}
