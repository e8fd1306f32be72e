// Package protocol holds the values that every part of interlink, and every
// other implementation it exchanges messages with, must agree on without
// any one step owning them: the two names that attribute text to interlink
// itself and to the own identity, the window in which a signed message
// counts as fresh, and how long a relay remembers a session.
//
// Each value has its home here and nowhere else: a package whose own
// setting follows from one of them (the outbox signs a message again once
// its signature would no longer be fresh) refers to it by name.
//
// It imports nothing, so the lowest packages can use it.
package protocol

import "time"

// Attribution names. Rendering puts a sender's name in front of everything
// the model reads, and these two words stand there for interlink itself and
// for the own identity, so no peer may carry them as a petname.
const (
	// SystemSender is the sender of the notices interlink writes itself:
	// inbox notices, pairing notices, saved failed deliveries.
	SystemSender = "Interlink"
	// SelfSender is the sender of a message signed with the own key, that
	// is from another session of this identity, when peers.json has no
	// petname for it. send_message takes it for such a session too.
	SelfSender = "self"
)

// Freshness bounds. A message signed more than MaxPast ago, or more than
// MaxFuture ahead of the local clock, is stale. Both bounds accept the exact
// limit. The past bound lets a message wait a day in a bus queue for a
// session that is away; the future bound is small because the only honest
// reason for a timestamp ahead of the receiver's clock is clock skew between
// machines, and a wide future window would let a captured message outlive
// the replay set's memory of it. The mailbox keeps what it needs to drop a
// redelivered message for MaxPast as well, since the trust gate lets a copy
// through for that long.
const (
	MaxPast   = 24 * time.Hour
	MaxFuture = 60 * time.Second
)

// RosterRetention is how long a relay keeps a session on its roster after
// the session last announced itself. Every roster a bus keeps, in memory or
// shared, forgets an entry this long after its last refresh; a message
// still waiting in an outbox by then is unlikely to find its recipient, so
// the outbox gives up after as long.
const RosterRetention = 72 * time.Hour
