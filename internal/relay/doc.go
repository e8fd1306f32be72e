// Package relay is the agent's HTTP client for interlink buses (relays).
//
// A [Client] speaks to one bus: it sends payloads, long-polls and
// acknowledges a route's queue, announces and withdraws presence, and reads
// the roster. [FetchRoster] reads the roster of every relay and keeps only
// announcements whose signatures verify. [ParseURLs] turns the configured
// relay list into base URLs.
//
// # Plain HTTP only
//
// Relays are reached over plain http:// on loopback or a private network;
// no TLS client is configured, and ParseURLs refuses every other scheme at
// startup rather than failing on the first request. The bus authenticates
// nobody, so nothing secret travels to it: payloads are signed messages and
// announcements are signed claims.
//
// # A relay is not trusted
//
// A relay may lie, stall or send garbage. Every request carries its own
// timeout on top of the caller's context, every response body is read
// through a size limit, and a non-2xx reply becomes a [*StatusError] whose
// excerpt of the body has control characters removed. Roster entries are
// verified one by one; the signature proves only which key made a claim, so
// names, working directories and summaries in an [Entry] are still raw,
// unverified text that display code must clean before showing it.
package relay
