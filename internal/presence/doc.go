// Package presence keeps this session visible on the relays and takes it
// off them when the session ends.
//
// [Describe] builds the session descriptor that goes into every
// announcement. An [Announcer] signs that descriptor and posts it to every
// relay at once when [Announcer.Run] starts, again at a fixed interval, and
// right after the summary changes. Failures are only logged at debug level:
// a relay that missed one announcement gets the next, and a session that
// stops announcing simply turns "away" on the roster.
//
// # Ending a session
//
// Shutdown happens in a fixed order. First the caller cancels the context of
// [Announcer.Run] and waits for it to return, so that no heartbeat can put
// the entry back. Then [Announcer.Unregister] withdraws the entry from every
// relay, and [Announcer.Goodbye] tells the sessions that last wrote to this
// one that it is going away. Every step is bounded in time and ignores relay
// errors, so a dead relay cannot hold up the exit; a session killed before
// it can say goodbye is eventually dropped by the relays' retention limit.
//
// Everything in a descriptor is a claim of this session about itself.
// Receivers clean it and show it as unverified text.
package presence
