// Package identity holds what an interlink identity is made of and how it
// signs: Ed25519 keys and their text form, the secret key file, message ids,
// the signed message with its canonical signing encoding, and signed presence
// announcements.
//
// # Encodings
//
// Keys, signatures and seeds travel as unpadded URL-safe base64 (RFC 4648 §5).
// Decoding is strict: padding, non-zero trailing bits, whitespace and line
// breaks anywhere are errors, so every value has exactly one text form.
//
// A message is signed over a domain-separated, length-prefixed byte string
// that starts with "interlink-v2\x00" (see [Canonical]). JSON is never signed,
// so key order and spacing in JSON are free; the routing hint reply_to is
// deliberately left out of the signature.
//
// # Verification
//
// [VerifyStrict] accepts exactly the signatures that ed25519-dalek's
// verify_strict accepts: on top of the checks of crypto/ed25519 (canonical S,
// cofactorless equation, byte comparison of R) it refuses public keys and R
// values of small order. Without that, the all-zero "identity" key verifies
// any message with a trivial signature.
//
// # Invariants
//
// A [PublicKey] is always 32 bytes that decode to a curve point. Identity
// equality is byte equality of that encoding, never point equality. A
// fingerprint is for people only and never authenticates anything.
package identity
