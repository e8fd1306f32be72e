// Package reqsign signs HTTP requests to a bus with a session's Ed25519
// key and verifies them on the bus, so that a bus open to other machines
// can tell which key sent a request before it lets anyone read,
// acknowledge or unregister that key's routes.
//
// # What is signed
//
// A signature covers these bytes, concatenated ([Canonical]):
//
//	"interlink-request-v1\x00"   21 bytes, the signing domain
//	key                          32 bytes, the signer's public key
//	u64le(time)                   8 bytes, Unix milliseconds
//	nonce                        16 bytes, random per request
//	SHA-256(body)                32 bytes
//	LP(method)                   e.g. "POST"
//	LP(authority)                the Host the client addressed, lower case
//	LP(target)                   path and raw query, as on the request line
//
// LP(s) is the length of s as a 32-bit little-endian number followed by
// the bytes of s, as in the message encoding; fixed-size fields come first.
//
// The domain is not the messages' "interlink-v2\x00" nor the
// announcements' "interlink-announce-v1\x00": a signature made for one
// purpose never verifies for another, so nothing a session signs for a
// request can be replayed as a message or an announcement, nor the other
// way round. The key is inside the signed bytes so that a signature binds
// the identity it is checked against. Method, target and body hash tie the
// signature to one operation on one route with one body: a signed poll
// cannot be turned into an acknowledgement, nor a send to one route into a
// send to another. The authority ties it to one bus, so a bus that
// receives a signed request (or anyone who sees it on the way) cannot play
// it to another bus that the same key uses. Time and nonce make every
// request unique; together with the verifier's nonce memory they make a
// captured request useless once it has been seen or once it is too old.
//
// # Headers
//
// The request carries [HeaderKey], [HeaderTime], [HeaderNonce] and
// [HeaderSignature]. The key, nonce and signature are unpadded URL-safe
// base64 read strictly (as the identity package reads keys); the time is
// decimal without leading zeros. Each header must appear exactly once.
// A request with none of the four is unsigned ([Unsigned]); one with some
// but not all is refused with [ErrMissing] naming the first one absent.
//
// # Bounds
//
// A request's time may be at most [MaxFuture] (60 s, the messages' bound:
// the only honest reason for a time ahead of the bus's clock is clock skew)
// ahead of the bus's clock, and at most [MaxPast] (5 minutes) behind it.
// The past window has to cover the same skew in the other direction, plus
// the time between signing and verification: the connect timeout (10 s), a
// bus's whole-request deadline (30 s from the first byte), a reverse proxy
// that buffers or retries the request, and a parked connection slot. Five
// minutes covers all of it with room to spare while keeping the nonce
// memory small: it holds a key's nonces for at most that long.
//
// A nonce is remembered until the request's time leaves the past window,
// which is exactly as long as the request would otherwise verify, so a
// replay is refused for as long as it could succeed. The memory is bounded
// per key and in total, with the rule of the mailbox's replay state: a key
// may hold at most [Options.PerKey] nonces (default 4,096, some 13 signed
// requests a second sustained over the window) and at most half of what
// the other keys leave free of [Options.Total] (default 65,536). A key
// whose share is full has its further requests refused with
// [ErrShareFull] until its own entries expire; nothing is ever forgotten
// early, so no key can make the verifier forget another key's nonces.
// Many keys together can fill the total, and then requests of keys
// without entries are refused until entries expire (at most [MaxPast]);
// a per-address limit in front of the verifier is what stops one client
// from making up many keys.
//
// # Behind a reverse proxy
//
// A proxy that rewrites Host or strips a path prefix changes what the bus
// sees. [Options.Authorities] lists further names the bus accepts as the
// authority and [Options.PathPrefixes] prefixes the proxy strips; the
// verifier tries each combination, at most [MaxAlternatives] of them.
package reqsign
