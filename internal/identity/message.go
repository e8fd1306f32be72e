package identity

import (
	"errors"
	"fmt"
	"math"
)

// Kind says what a message is for. An absent kind on the wire means
// [KindMessage].
type Kind string

// The message kinds.
const (
	KindMessage     Kind = "message"
	KindPairRequest Kind = "pair_request"
	KindPairAccept  Kind = "pair_accept"
	// KindReceipt is an end-to-end receipt: the recipient of messages
	// telling their sender, in Text, how far they got (package e2e). It
	// goes only to keys that announced [CapReceipts].
	KindReceipt Kind = "receipt"
)

// Valid reports whether k is one of the four kinds.
func (k Kind) Valid() bool {
	switch k {
	case KindMessage, KindPairRequest, KindPairAccept, KindReceipt:
		return true
	}
	return false
}

// Pairing reports whether k is one of the pairing kinds.
func (k Kind) Pairing() bool { return k == KindPairRequest || k == KindPairAccept }

// Status is the optional task status of a message. The empty Status means
// none.
type Status string

// The task statuses. The spelling "canceled" (one l) is part of the wire
// format.
const (
	StatusUpdate     Status = "update"
	StatusNeedsInput Status = "needs_input"
	StatusResult     Status = "result"
	StatusFailed     Status = "failed"
	StatusCanceled   Status = "canceled"
)

// Valid reports whether s is none or one of the five statuses.
func (s Status) Valid() bool {
	switch s {
	case "", StatusUpdate, StatusNeedsInput, StatusResult, StatusFailed, StatusCanceled:
		return true
	}
	return false
}

// Terminal reports whether s ends a task: result, failed or canceled.
func (s Status) Terminal() bool {
	return s == StatusResult || s == StatusFailed || s == StatusCanceled
}

// Errors about message content and signatures.
var (
	// ErrKind reports a kind outside the four known ones.
	ErrKind = errors.New("identity: unknown message kind")
	// ErrStatus reports a status outside the five known ones.
	ErrStatus = errors.New("identity: unknown task status")
	// ErrFieldTooLong reports a field too long for a length prefix.
	ErrFieldTooLong = errors.New("identity: field too long")
	// ErrSignature reports a signature that is malformed or does not verify.
	ErrSignature = errors.New("identity: signature does not verify")
)

// Message is a signed interlink message as it travels through a bus.
//
// From and To are key texts; To is always a bare key, never a route. Empty
// TaskID, Status, InReplyTo and ReplyTo mean absent: they are left out of the
// JSON, and on receipt an empty value is treated as absent. ReplyTo is an
// unsigned routing hint (the sender's own route) and is not covered by Sig.
type Message struct {
	From      string
	To        string
	Text      string
	TS        uint64
	MsgID     string
	Kind      Kind
	TaskID    string
	Status    Status
	InReplyTo string
	ReplyTo   string
	Sig       string
}

// kind returns the kind, with empty meaning message.
func (m *Message) kind() Kind {
	if m.Kind == "" {
		return KindMessage
	}
	return m.Kind
}

// Canonical parses the keys of m and returns the content its signature
// covers. Keys that do not parse, an unknown kind or status, and fields too
// long for a length prefix are errors.
func (m *Message) Canonical() (Canonical, error) {
	var c Canonical
	from, err := ParsePublicKey(m.From)
	if err != nil {
		return c, fmt.Errorf("from: %w", err)
	}
	to, err := ParsePublicKey(m.To)
	if err != nil {
		return c, fmt.Errorf("to: %w", err)
	}
	k := m.kind()
	if !k.Valid() {
		return c, fmt.Errorf("%w: %q", ErrKind, k)
	}
	if !m.Status.Valid() {
		return c, fmt.Errorf("%w: %q", ErrStatus, m.Status)
	}
	for _, f := range [...]string{m.Text, m.MsgID, m.TaskID, m.InReplyTo} {
		if uint64(len(f)) > math.MaxUint32 {
			return c, ErrFieldTooLong
		}
	}
	c = Canonical{
		From: from, To: to, TS: m.TS,
		Kind: string(k), MsgID: m.MsgID, Text: m.Text,
		Status: string(m.Status), TaskID: m.TaskID, InReplyTo: m.InReplyTo,
	}
	return c, nil
}

// Verify checks the signature of m with [VerifyStrict] and returns the
// authenticated sender. A From or To that does not parse as a key is a
// signature failure too, so every error wraps [ErrSignature].
func (m *Message) Verify() (PublicKey, error) {
	c, err := m.Canonical()
	if err != nil {
		return PublicKey{}, fmt.Errorf("%w: %w", ErrSignature, err)
	}
	sig, err := DecodeBase64(m.Sig)
	if err != nil {
		return PublicKey{}, fmt.Errorf("%w: sig: %w", ErrSignature, err)
	}
	if len(sig) != SignatureSize {
		return PublicKey{}, fmt.Errorf("%w: %v", ErrSignature, ErrSignatureLength)
	}
	if !VerifyStrict(c.From[:], c.Bytes(), sig) {
		return PublicKey{}, ErrSignature
	}
	return PublicKey(c.From), nil
}

// SignMessage sets m.From to the signer's key, fills in the kind when it is
// empty, and signs m. The recipient, timestamp and every other signed field
// must be set before; ReplyTo may change afterwards without breaking the
// signature.
func (s *Signer) SignMessage(m *Message) error {
	m.From = s.pub.String()
	m.Kind = m.kind()
	c, err := m.Canonical()
	if err != nil {
		return fmt.Errorf("identity: sign: %w", err)
	}
	m.Sig = EncodeBase64(s.Sign(c.Bytes()))
	return nil
}
