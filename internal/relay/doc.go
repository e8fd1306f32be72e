// Package relay is the agent's HTTP client for interlink buses (relays).
//
// A [Client] speaks to one bus: it sends payloads, long-polls and
// acknowledges a route's queue, announces and withdraws presence, and reads
// the roster. [FetchRoster] reads the roster of every relay and keeps only
// announcements whose signatures verify. [ParseURLs] turns the configured
// relay list into base URLs.
//
// # HTTP and HTTPS
//
// A relay URL is https:// or http://. Over https the certificate is
// checked against the system's roots, which Go reads from the places the
// system keeps them and from SSL_CERT_FILE and SSL_CERT_DIR when they are
// set; a certificate problem becomes a [*TLSError] whose sentence says
// what is wrong in plain words. Plain http:// is for loopback and for
// relays the original's agents share; a [Client] for a plain http://
// relay that is not on loopback logs one warning when it is made.
//
// With [Options.Signer] every request is signed (package reqsign), so
// that a relay that checks signatures lets the session read, acknowledge
// and unregister its own routes and nobody else. Payloads are signed
// messages and announcements are signed claims either way.
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
