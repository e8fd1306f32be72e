// Package keylimit limits how often each client may act, with one token
// bucket per client: per verified key for signed requests (one limiter for
// sends, another for roster updates, both of one type), per address for
// unsigned ones.
//
// # Buckets
//
// A bucket holds up to Burst tokens and gains one every Every; an action
// takes one token, and a refused action takes none and says how long until
// a token is there (the Retry-After a handler sends). The state of a bucket
// is one number, the time at which it will be full again (the generic cell
// rate algorithm), so a bucket that is full carries no state at all: it is
// exactly what a client never seen before gets.
//
// # Memory
//
// A limiter tracks at most [Options.MaxTracked] clients (default
// [DefaultMaxTracked]). A new client beyond that takes the place of an idle
// one: among the [evictScan] clients that acted longest ago, the one whose
// bucket holds the most tokens, which is a full one whenever any of them is
// full. Forgetting a full bucket changes nothing; forgetting one that is
// not full gives that client what a new client gets, and a client can
// always become new by making up a key. So an attacker generating keys or
// addresses costs a bounded amount of memory and gains nothing over
// making up keys, and what stops many keys from one place is the
// per-address limit in front. Limiters of many clients are split into
// shards, each with its own lock and its share of the bound, so that
// concurrent requests of different clients rarely wait for each other.
//
// # Addresses
//
// An unsigned client is its address: an IPv4 address, or the /64 of an
// IPv6 address, since one IPv6 host usually holds a whole /64 ([Client]).
// Clients behind one address (a proxy, a NAT) share its bucket.
package keylimit
