// Package inbound moves messages from one relay into the local stores through
// the trust gate, acknowledging the relay only after the local commit.
//
// A [Loop] serves one relay. [Loop.Run] long-polls the queue of the own route
// and passes each delivery to [Loop.Handle], which decides what becomes of it:
//
//	decode -> loopback guard -> fresh peer policy -> gate -> commit -> ack
//
// An ordinary message is retained in the shared mailbox under the sender's
// petname; a pairing request (a knock) is stored as a pending inbound request
// and announced to the operator; a pairing acceptance completes a request this
// session sent, adding the peer. Rejected and undecodable payloads are
// acknowledged, so garbage cannot come back forever.
//
// # Acknowledge after commit
//
// The relay keeps a message until it is acknowledged. Handle reports "ack"
// only once the message, or the pairing change it causes, is durably stored;
// when a local store fails (an unreadable peers.json, a full or corrupt
// mailbox, a pairing file that cannot be written), the message is left on the
// relay and Run tries again after [Config.RetryDelay], when the relay hands
// the same message back. The exception is a message whose sender already
// holds its whole share of the mailbox ([mailbox.ErrOverShare]): it is
// dropped and acknowledged, since the relay serves a route's messages in
// order and it would otherwise hold up the messages of every other sender
// queued behind it. Nothing is lost; a message may be seen twice, which
// the gate's replay set and the mailbox's own duplicate check absorb. Delivery
// is at least once into those layers, not exactly once.
//
// The gate records a message in its replay set when it admits it, so a
// redelivered copy would be refused as a replay. A Loop therefore remembers
// the one admitted message whose commit failed, by its exact payload, and when
// the relay hands that payload back it resumes the commit with the decision
// already made instead of asking the gate again. A relay serves the oldest
// unacknowledged message first, so one remembered message is enough.
//
// # Shared state
//
// One [gate.Gate] and one [Sticky] serve every relay loop of a process, so the
// same message arriving through two relays is admitted once, and a reply goes
// to the session a peer last wrote from, whichever relay carried it.
//
// # Knocks
//
// Any key may knock, so a knock must cost little. One [Knocks] limiter per
// process bounds the rate per key and across keys; the pairing store keeps
// one request per key (a repeat refreshes it and adds no notice) and never
// evicts a pending request to make room for a new one. Knocks turned away
// for the rate or a full list are counted and reported to the operator in
// one notice, at most every [DroppedNoticeEvery].
//
// # Untrusted content
//
// Message bodies are never logged: logs carry msg_id, the sender's
// fingerprint and a stable reason. The name a knock claims is shown to the
// operator only cleaned, bounded, quoted and labelled unverified, and the
// notice is attributed to the fixed word "Interlink", never to that name.
package inbound
