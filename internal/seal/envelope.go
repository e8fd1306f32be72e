package seal

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"strconv"

	"github.com/interlink-go/interlink/internal/identity"
)

// EnvelopeDomain starts the bytes an envelope's signature covers. It is
// distinct from the message domain "interlink-v2\x00" and from every other
// interlink domain, so no signature made for one can be replayed as the
// other.
const EnvelopeDomain = "interlink-sealed-v1\x00"

// headerLen is the size of the envelope header: domain, both keys, ts.
const headerLen = len(EnvelopeDomain) + 2*identity.KeySize + 8

// MaxEnvelope bounds the JSON text of an envelope that [ParseEnvelope]
// reads: the base64 of a [MaxSealed] box plus room for the other fields
// and some spacing. Anything longer is refused before it is decoded.
const MaxEnvelope = (MaxSealed*4+2)/3 + 1024

// Envelope is a sealed message as it travels through a bus: the only
// fields a relay sees. Its JSON form is
//
//	{"from":"<key>","to":"<key>","ts":<u64 ms>,"sealed":"<base64>","sig":"<base64>"}
//
// From and To are bare Ed25519 keys (never routes), TS the inner message's
// signing time in Unix milliseconds, Sealed the box of the inner message's
// JSON, and Sig the sender's Ed25519 signature of [Envelope.SignedBytes].
// Keys, box and signature are unpadded URL-safe base64, decoded strictly.
type Envelope struct {
	From   identity.PublicKey
	To     identity.PublicKey
	TS     uint64
	Sealed []byte
	Sig    [identity.SignatureSize]byte
}

// header returns "interlink-sealed-v1\x00" ‖ from(32) ‖ to(32) ‖ u64le(ts).
// It is the additional data of the box, so the box opens only inside the
// envelope it was sealed for.
func header(from, to identity.PublicKey, ts uint64) []byte {
	b := make([]byte, 0, headerLen)
	b = append(b, EnvelopeDomain...)
	b = append(b, from[:]...)
	b = append(b, to[:]...)
	return binary.LittleEndian.AppendUint64(b, ts)
}

// SignedBytes returns what the envelope's signature covers:
//
//	"interlink-sealed-v1\x00" ‖ from(32) ‖ to(32) ‖ u64le(ts) ‖ LP(sealed)
//
// with LP(s) = u32le(len(s)) ‖ s, as in the message encoding. Every field
// of the envelope but the signature itself is covered.
func (e *Envelope) SignedBytes() []byte {
	b := header(e.From, e.To, e.TS)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(e.Sealed)))
	return append(b, e.Sealed...)
}

// Verify checks the envelope's signature with [identity.VerifyStrict] and
// returns the authenticated sender; a failure wraps [ErrBadOuterSignature].
// It decrypts nothing, so a forged or altered envelope costs one signature
// check, like a plaintext message.
func (e *Envelope) Verify() (identity.PublicKey, error) {
	if len(e.Sealed) > MaxSealed {
		return identity.PublicKey{}, fmt.Errorf("%w: a sealed box of %d bytes", ErrOversized, len(e.Sealed))
	}
	if !identity.VerifyStrict(e.From[:], e.SignedBytes(), e.Sig[:]) {
		return identity.PublicKey{}, ErrBadOuterSignature
	}
	return e.From, nil
}

type wireEnvelope struct {
	From   string `json:"from"`
	To     string `json:"to"`
	TS     uint64 `json:"ts"`
	Sealed string `json:"sealed"`
	Sig    string `json:"sig"`
}

// MarshalJSON writes the envelope in the form shown at [Envelope].
func (e Envelope) MarshalJSON() ([]byte, error) {
	return identity.Marshal(wireEnvelope{
		From: e.From.String(), To: e.To.String(), TS: e.TS,
		Sealed: identity.EncodeBase64(e.Sealed), Sig: identity.EncodeBase64(e.Sig[:]),
	})
}

// UnmarshalJSON decodes an envelope as [ParseEnvelope] does.
func (e *Envelope) UnmarshalJSON(data []byte) error {
	out, err := ParseEnvelope(data)
	if err != nil {
		return err
	}
	*e = out
	return nil
}

// ParseEnvelope decodes the JSON of an envelope strictly. Text longer than
// [MaxEnvelope] or a box longer than [MaxSealed] wraps [ErrOversized]; a
// shape that is not an envelope (missing or null field, wrong type, a ts
// that is not an unsigned integer, a box that is not strict base64) wraps
// [ErrMalformed]; a from, to or sig that is not a valid key or signature
// wraps [ErrBadOuterSignature], as in message verification. Unknown keys
// are ignored.
func ParseEnvelope(data []byte) (Envelope, error) {
	var e Envelope
	if len(data) > MaxEnvelope {
		return e, fmt.Errorf("%w: an envelope of %d bytes, at most %d", ErrOversized, len(data), MaxEnvelope)
	}
	var f map[string]json.RawMessage
	if err := json.Unmarshal(data, &f); err != nil {
		return e, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if f == nil {
		return e, fmt.Errorf("%w: not an object", ErrMalformed)
	}
	var w wireEnvelope
	for _, s := range []struct {
		key string
		dst *string
	}{{"from", &w.From}, {"to", &w.To}, {"sealed", &w.Sealed}, {"sig", &w.Sig}} {
		raw, ok := f[s.key]
		if !ok || len(raw) == 0 || raw[0] != '"' {
			return e, fmt.Errorf("%w: %s missing or not a string", ErrMalformed, s.key)
		}
		if err := json.Unmarshal(raw, s.dst); err != nil {
			return e, fmt.Errorf("%w: %s: %v", ErrMalformed, s.key, err)
		}
	}
	ts, ok := f["ts"]
	if !ok {
		return e, fmt.Errorf("%w: ts missing", ErrMalformed)
	}
	var err error
	if e.TS, err = strconv.ParseUint(string(ts), 10, 64); err != nil {
		return e, fmt.Errorf("%w: ts is not an unsigned integer", ErrMalformed)
	}
	if base64.RawURLEncoding.DecodedLen(len(w.Sealed)) > MaxSealed {
		return e, fmt.Errorf("%w: a sealed box of about %d bytes, at most %d", ErrOversized,
			base64.RawURLEncoding.DecodedLen(len(w.Sealed)), MaxSealed)
	}
	if e.Sealed, err = identity.DecodeBase64(w.Sealed); err != nil {
		return e, fmt.Errorf("%w: sealed: %v", ErrMalformed, err)
	}
	if e.From, err = identity.ParsePublicKey(w.From); err != nil {
		return e, fmt.Errorf("%w: from: %w", ErrBadOuterSignature, err)
	}
	if e.To, err = identity.ParsePublicKey(w.To); err != nil {
		return e, fmt.Errorf("%w: to: %w", ErrBadOuterSignature, err)
	}
	sig, err := identity.DecodeBase64(w.Sig)
	if err != nil || len(sig) != identity.SignatureSize {
		return e, fmt.Errorf("%w: sig: %v", ErrBadOuterSignature, identity.ErrSignatureLength)
	}
	copy(e.Sig[:], sig)
	return e, nil
}

// SealMessage seals the signed message m from s to its recipient and
// returns the envelope to post as a /send payload. m must already be
// signed by s (its signature is checked, so a message signed by another key
// is refused with [ErrInnerSignature]); it is sealed as its ordinary JSON,
// reply_to included. rand supplies the ephemeral key; nil means
// crypto/rand.
func SealMessage(s *identity.Signer, m *identity.Message, rand io.Reader) (Envelope, error) {
	from, err := m.Verify()
	if err != nil {
		return Envelope{}, fmt.Errorf("%w: %w", ErrInnerSignature, err)
	}
	if from != s.Public() {
		return Envelope{}, fmt.Errorf("%w: signed by %s, not by the sealing key %s",
			ErrInnerSignature, from.Fingerprint(), s.Public().Fingerprint())
	}
	to, err := identity.ParsePublicKey(m.To)
	if err != nil { // unreachable after Verify
		return Envelope{}, fmt.Errorf("%w: to: %w", ErrInnerSignature, err)
	}
	inner, err := identity.Marshal(m)
	if err != nil {
		return Envelope{}, fmt.Errorf("seal: %w", err)
	}
	e := Envelope{From: from, To: to, TS: m.TS}
	if e.Sealed, err = seal(to, inner, header(from, to, m.TS), rand); err != nil {
		return Envelope{}, err
	}
	copy(e.Sig[:], s.Sign(e.SignedBytes()))
	return e, nil
}

// OpenMessage takes the JSON payload of a sealed message addressed to r
// and returns the inner signed message, running every check in this order
// and stopping at the first that fails:
//
//	parse (ErrOversized, ErrMalformed) -> envelope signature (ErrBadOuterSignature)
//	-> addressed to r (ErrNotForMe) -> decrypt (ErrUndecryptable)
//	-> decode (ErrInnerMalformed) -> inner signature (ErrInnerSignature)
//	-> inner from, to, ts equal the envelope's (ErrMismatch)
//
// Nothing is decrypted before the envelope's signature verifies and names
// r, and nothing is returned before the inner signature verifies. The
// caller still runs the trust gate on the result (allowlist, freshness,
// replay); the inner message is exactly what a plaintext delivery would
// have carried.
func OpenMessage(r *Recipient, payload []byte) (identity.Message, error) {
	e, err := ParseEnvelope(payload)
	if err != nil {
		return identity.Message{}, err
	}
	return r.OpenEnvelope(&e)
}

// OpenEnvelope runs the checks of [OpenMessage] from the envelope
// signature on, for a caller that parsed e itself (to look at its sender
// or time first).
func (r *Recipient) OpenEnvelope(e *Envelope) (identity.Message, error) {
	from, err := e.Verify()
	if err != nil {
		return identity.Message{}, err
	}
	if e.To != r.pub {
		return identity.Message{}, fmt.Errorf("%w: addressed to %s", ErrNotForMe, e.To.Fingerprint())
	}
	plain, err := r.open(e.Sealed, header(e.From, e.To, e.TS))
	if err != nil {
		return identity.Message{}, err
	}
	m, err := identity.DecodeMessage(plain)
	if err != nil {
		return identity.Message{}, fmt.Errorf("%w: %w", ErrInnerMalformed, err)
	}
	innerFrom, err := m.Verify()
	if err != nil {
		return identity.Message{}, fmt.Errorf("%w: %w", ErrInnerSignature, err)
	}
	innerTo, _ := identity.ParsePublicKey(m.To) // parsed by Verify
	switch {
	case innerFrom != from:
		return identity.Message{}, fmt.Errorf("%w: inner from %s, envelope from %s",
			ErrMismatch, innerFrom.Fingerprint(), from.Fingerprint())
	case innerTo != e.To:
		return identity.Message{}, fmt.Errorf("%w: inner to %s, envelope to %s",
			ErrMismatch, innerTo.Fingerprint(), e.To.Fingerprint())
	case m.TS != e.TS:
		return identity.Message{}, fmt.Errorf("%w: inner ts %d, envelope ts %d", ErrMismatch, m.TS, e.TS)
	}
	return m, nil
}

// EnvelopeLen returns the length of the JSON of the envelope that
// [SealMessage] makes of a message whose own JSON is n bytes and whose
// timestamp is ts, without sealing anything: what a sealed message costs
// on the wire, for size checks made before sending.
func EnvelopeLen(n int, ts uint64) int {
	const fixed = len(`{"from":"","to":"","ts":,"sealed":"","sig":""}`)
	keyLen := base64.RawURLEncoding.EncodedLen(identity.KeySize)
	return fixed + 2*keyLen + len(strconv.FormatUint(ts, 10)) +
		base64.RawURLEncoding.EncodedLen(SealedLen(n)) +
		base64.RawURLEncoding.EncodedLen(identity.SignatureSize)
}
