// Package pairing keeps the pairing state of one identity and session: the
// pairing requests it has received and the requests it has sent and not yet
// seen accepted.
//
// Pairing is the handshake that admits a new peer. A requester sends a
// pair_request (a "knock") whose msg_id is the request id; the target's
// operator accepts it, which adds the requester to the local peer policy and
// queues a pair_accept whose in_reply_to carries the request id back to the
// exact session that knocked. This package builds those messages ([RequestMessage],
// [AcceptMessage]) and stores the state between steps ([Store]). The
// messages go out through the session's outbox (package outbox), which
// [Store.Request] and [Store.Accept] queue them in, in the same locked change
// as the state they belong to: like every message, a knock or a
// confirmation is sent by the one process holding the session's sender
// lock, signed again when old, given up after the outbox's expiry, and
// shown by list_pending and message_status. The peer policy and the trust
// gate live elsewhere; the caller passes the policy change to
// [Store.Accept] as a callback.
//
// # File
//
// The state lives in <state root>/pairing/<own key>/<session>.json, one file
// per identity and session, so that a confirmation returns to the session
// that asked for it and sibling sessions never consume each other's
// requests. It is compact JSON with two required lists:
//
//	{"inbound":[Request...],"outbound":[Request...],"queued":[]}
//
// "queued" is where earlier versions kept the pairing messages still to
// be sent. It is optional when read and kept as read by every change;
// [Store.MoveQueued], called when a session opens, hands what it holds to
// the outbox and leaves it empty, so an earlier version sharing the file
// can still read it.
//
// A missing file is the empty state. Every change is one locked
// read-modify-write: take the lock on <session>.lock, re-read the file,
// apply the change, replace the file atomically. Reads take no lock.
//
// # Bounds
//
// inbound and outbound hold at most [InboundCap] and [OutboundCap] entries,
// one per key. A knock from a key already pending refreshes its entry in
// place; a knock from a new key while inbound is full is refused
// ([ErrInboundFull]) and never evicts a pending request, so a flood of
// knocks from fresh keys cannot push out one the operator has yet to
// decide on. (Rate limits are the receiving loop's business; see package
// inbound.) A new outbound request to a key replaces the one to that key,
// and while outbound is at its cap the oldest is evicted: those are this
// session's own requests. The messages in flight are the outbox's, with its
// bounds: an outbox that refuses a confirmation refuses the acceptance,
// before the peer is admitted, because a peer admitted with no
// confirmation on its way would be admitted on one side only.
//
// # Untrusted content
//
// A knock is signed, but its claimed name is only what the sender chose to
// say. It is cleaned and bounded with [untrusted.Name] before it is stored,
// and stored and matched in that form; whoever shows it must still quote it
// and label it unverified. The knock's reply_to hint is unsigned: it is used
// only when it names a session of the signing key (see [InboundFromKnock]),
// so a relay that rewrites it can at most steer the confirmation to another
// session of the same requester.
//
// # Corrupt files
//
// A file that is not valid JSON, misses one of the three lists, or holds a
// malformed request is reported as [ErrCorrupt] and is never overwritten:
// an operator's file is not destroyed silently. A job an earlier version
// queued that does not decode, or that this side would never have queued
// ([ErrBadJob]), is dropped and logged by [Store.MoveQueued] rather than
// handed to the outbox, which would sign it again with the own key.
package pairing
