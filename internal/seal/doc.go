// Package seal encrypts interlink messages to their recipient, so that a
// relay, its disk, its operator and anyone who reads a queue see no text,
// no task fields and no names beyond the two keys of the route.
//
// It is a building block: it seals and opens; deciding per peer whether to
// seal, and admitting what it opens, belong to the agent and the trust
// gate.
//
// # Keys
//
// An interlink identity is an Ed25519 key; sealing needs no second key.
// The recipient's X25519 public key is the Montgomery form of its Ed25519
// point ([PublicKeyX25519]); the matching private scalar is the first half
// of SHA-512 of the seed ([PrivateKeyX25519]), the scalar Ed25519 itself
// signs with. age's ssh-ed25519 recipients and libsodium's conversion
// functions use the same map. Keys that are not points, not canonically
// encoded, or of small order cannot be recipients.
//
// # The sealed box
//
// [Seal] makes an anonymous box for one recipient:
//
//	eph(32) ‖ ChaCha20-Poly1305(key, nonce = 12 zero bytes, pad(plaintext), ad)
//	key = HKDF-SHA256(secret = X25519(e, X), salt = eph ‖ X,
//	                  info = "interlink-seal-v1\x00" ‖ recipient Ed25519 key)
//
// where e is a fresh ephemeral scalar, eph its public key and X the
// recipient's X25519 key. Each box has its own key, so the fixed nonce is
// used once per key. The salt binds both public keys; the info binds the
// Ed25519 key, because a key and its negation (the sign bit flipped) share
// one X25519 key, and a box for one must not open for the other. An
// all-zero shared secret (a low-order ephemeral key) is refused: the key
// would be known to everyone. The primitives are crypto/ecdh, crypto/hkdf
// and golang.org/x/crypto/chacha20poly1305; nothing here is home-made
// cryptography.
//
// pad(p) is u32le(len(p)) ‖ p ‖ zero bytes, [PaddedLen] bytes in all: at
// least [MinPadded] (1 KiB), above that the Padmé rule, which keeps only
// the top ⌊log2 ⌊log2 L⌋⌋+1 bits of the length significant and costs at
// most 1/16 more. Every short message, a pairing request included, is the
// same size on the wire; longer ones fall into one of 226 sizes up
// to 1 MiB. Padding is checked strictly on opening (the length fits, the
// size is the one the length calls for, the padding is zeros).
//
// # The envelope
//
// A sealed message is the ordinary signed message (domain
// "interlink-v2\x00", unchanged, reply_to included), serialized as JSON
// exactly as it would travel in plaintext, then sealed, inside an
// [Envelope], which is the /send payload:
//
//	{"from":"<key>","to":"<key>","ts":<u64 ms>,"sealed":"<base64>","sig":"<base64>"}
//
// from and to are bare keys (the bus route stays in the /send "to", as
// today), ts is the inner message's ts, sealed the box, sig the sender's
// Ed25519 signature over
//
//	"interlink-sealed-v1\x00" ‖ from(32) ‖ to(32) ‖ u64le(ts) ‖ LP(sealed)
//
// with LP(s) = u32le(len(s)) ‖ s, in the style of the message encoding.
// Keys, box and signature are unpadded URL-safe base64, decoded strictly.
// The first 92 bytes of that encoding (domain, keys, ts) are also the
// box's associated data, so a box opens only inside the envelope it was
// sealed for.
//
// What is authenticated, and by what:
//
//   - the envelope (every field and every ciphertext byte) by the outer
//     signature, under a domain no other interlink signature uses. A relay
//     that changes anything, or an envelope forged under another key, is
//     refused by one signature check, before any decryption;
//   - the box's context by the AEAD: a sender cannot lift someone else's
//     box into an envelope of its own, nor restamp its own;
//   - the message itself by its own signature, unchanged, so what comes
//     out is exactly what a plaintext delivery would carry, and the gate
//     checks it as it checks any message;
//   - the link between the two: the inner from, to and ts must equal the
//     envelope's. Without it, anyone who ever saw a plaintext message
//     (from a relay, before sealing was negotiated) could re-send it
//     sealed in an envelope of their own.
//
// Because the signature covers the box, reply_to, unsigned in a plaintext
// message, is now protected from relays too.
//
// # Order of checks
//
// [OpenMessage] stops at the first failure, each with its own sentinel
// (see [Reason]):
//
//	size, shape                   ErrOversized, ErrMalformed
//	envelope signature            ErrBadOuterSignature
//	addressed to me               ErrNotForMe
//	decrypt and unpad             ErrUndecryptable
//	inner message decodes         ErrInnerMalformed
//	inner signature               ErrInnerSignature
//	inner from, to, ts = outer    ErrMismatch
//
// then the trust gate runs on the inner message as on any other
// (allowlist, freshness, replay, dispatch). Nothing reaches the model
// before both signatures verify; a stranger's envelope costs a signature
// check and at most one X25519 and one pass of ChaCha20-Poly1305 over a
// bounded body, which is the cost class of a plaintext message.
//
// # What a relay still sees
//
// The sender's and recipient's keys, the recipient's route (session id),
// the time (ts and when it was queued), the size class of the message, and
// who polls which queue from where. It no longer sees the text, the kind
// (a pairing request looks like any short message), msg_id, task_id,
// status, in_reply_to, or the sender's session in reply_to.
//
// # Sizes
//
// A plaintext of n bytes makes a box of 48 + [PaddedLen](n) bytes
// (ephemeral key 32, tag 16) and an envelope of 231 + ⌈4/3 of the box⌉
// bytes of JSON (with a 13-digit ts). A message whose JSON fits in 1,020
// bytes travels as 1,661 bytes, whatever its text, kind or task fields
// (a plaintext message of that kind is some 300 to 1,000). The largest
// plaintext, [MaxPlaintext] (1 MiB, the largest /send body the agent
// builds), makes a box of 1,081,392 bytes and an envelope of 1,442,087,
// under the bus's 2 MiB body bound with room for any route.
package seal
