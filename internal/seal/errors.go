package seal

import "errors"

// Errors, grouped by where they arise. Every error this package returns
// wraps exactly one of them, so callers branch with errors.Is and logs carry
// a stable value from [Reason].
var (
	// ErrRecipientKey: the recipient's Ed25519 key cannot receive sealed
	// messages: it is not a curve point, not the canonical encoding of
	// its point, or a point of small order.
	ErrRecipientKey = errors.New("seal: unusable recipient key")
	// ErrOversized: a plaintext over [MaxPlaintext], or an envelope or
	// sealed box larger than any that a plaintext of that size makes.
	ErrOversized = errors.New("seal: oversized")

	// ErrMalformed: the envelope is not a well-formed JSON envelope
	// (not an object, a field missing or of the wrong type, sealed bytes
	// that are not strict base64).
	ErrMalformed = errors.New("seal: malformed envelope")
	// ErrBadOuterSignature: the envelope's signature does not verify, or
	// its from, to or sig is not a valid key or signature. Nothing is
	// decrypted.
	ErrBadOuterSignature = errors.New("seal: bad envelope signature")
	// ErrNotForMe: a validly signed envelope addressed to another key.
	// Nothing is decrypted.
	ErrNotForMe = errors.New("seal: envelope not addressed to me")
	// ErrUndecryptable: the sealed bytes are truncated, carry a
	// low-order ephemeral key, fail authentication (tampered, sealed to
	// another key, or lifted into another envelope) or hold malformed
	// padding.
	ErrUndecryptable = errors.New("seal: undecryptable")
	// ErrInnerMalformed: the decrypted bytes are not a signed message.
	ErrInnerMalformed = errors.New("seal: inner message malformed")
	// ErrInnerSignature: the inner message's own signature does not
	// verify (on sealing: the message was not signed by the sealing key).
	ErrInnerSignature = errors.New("seal: inner message signature bad")
	// ErrMismatch: both signatures verify, but the inner message's from,
	// to or ts differs from the envelope's.
	ErrMismatch = errors.New("seal: inner message does not match envelope")
)

// Reason returns the stable log value of an error from this package: the
// sentinel's name without "Err", in snake case. Other errors give "error".
func Reason(err error) string {
	for _, r := range []struct {
		err  error
		name string
	}{
		{ErrRecipientKey, "recipient_key"},
		{ErrOversized, "oversized"},
		{ErrMalformed, "malformed"},
		{ErrBadOuterSignature, "bad_outer_signature"},
		{ErrNotForMe, "not_for_me"},
		{ErrUndecryptable, "undecryptable"},
		{ErrInnerMalformed, "inner_malformed"},
		{ErrInnerSignature, "inner_signature"},
		{ErrMismatch, "mismatch"},
	} {
		if errors.Is(err, r.err) {
			return r.name
		}
	}
	return "error"
}
