// Package roster is the bus's presence list: the last announcement of each
// roster key, bounded in entries ([Cap]) and in the bytes of its listing
// ([MaxBytes]), and the /roster answers made from it.
//
// A [Roster] lives in memory. Every change makes the next [Roster.Snapshot]
// anew, sorted by roster key; listings ([Snapshot.Listing]) are served
// from the snapshot without the roster's lock, and splice each entry's age
// into fields encoded once, when the entry was announced. A listing carries
// a weak entity tag that names the entries it lists and when each was
// announced, so a client can revalidate it.
//
// The roster verifies nothing about an announcement except, for a bus
// that requires signed requests, the privacy extension that decides which
// requesters see an entry's details ([Snapshot.Listing] with private set).
//
// Several buses on one shared store keep one roster through a [Log] of
// changes that each applies, in the log's order and with the receipt time
// each change carries, to its own [Roster] ([Share]); every copy ends up
// the same.
package roster
