package identity

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
)

// AnnounceDomain starts the signed bytes of a presence announcement, keeping
// announcement signatures apart from message signatures.
const AnnounceDomain = "interlink-announce-v1\x00"

// SessionInfo describes one session of an identity in the presence roster.
// All of it is self-claimed: a receiver shows it as unverified text.
type SessionInfo struct {
	SessionID string `json:"session_id"`
	Cwd       string `json:"cwd"`
	GitRoot   string `json:"git_root"`
	Summary   string `json:"summary"`
}

// Announcement is a signed presence record. The bus stores it verbatim and
// stamps AgeMS when it lists the roster; AgeMS is not signed. Session titles
// of some older versions (title, title_sig) are never written and are
// ignored on receipt.
//
// Caps and CapsSig are the capabilities extension: what the session
// accepts beyond the original's format (see [CapSealed]), signed apart
// from the main signature and bound to it ([Signer.AnnounceCaps],
// [Announcement.VerifiedCaps]). An announcement without them is byte for
// byte the original's; clients that do not know them ignore both keys and
// verify the unchanged main signature.
type Announcement struct {
	PubKey  string      `json:"pubkey"`
	Name    string      `json:"name"`
	Session SessionInfo `json:"session"`
	TS      uint64      `json:"ts"`
	Sig     string      `json:"sig"`
	Caps    []string    `json:"caps,omitempty"`
	CapsSig string      `json:"caps_sig,omitempty"`
	// The privacy extension ([Signer.AnnouncePrivate], [DecodePrivate]):
	// written by the agent, read by relays only. [Announcement.UnmarshalJSON]
	// does not read it, so a client's decoded announcement never has it.
	Readers       []string `json:"readers,omitempty"`
	Discoverable  bool     `json:"discoverable,omitempty"`
	PublicSig     string   `json:"public_sig,omitempty"`
	PublicCapsSig string   `json:"public_caps_sig,omitempty"`
	PrivateSig    string   `json:"private_sig,omitempty"`
	AgeMS         *uint64  `json:"age_ms,omitempty"`
}

// CapsDomain starts the bytes the capabilities signature covers:
//
//	"interlink-announce-caps-v1\x00" ‖ sig(64) ‖ u32le(n) ‖ LP(cap_1) … LP(cap_n)
//
// where sig is the raw main signature of the same announcement, so the
// list cannot be moved to another announcement, another session or
// another key.
const CapsDomain = "interlink-announce-caps-v1\x00"

// CapSealed is the capability of a session that accepts sealed messages
// (package seal).
const CapSealed = "sealed-v1"

// CapReceipts is the capability of a session that sends and accepts
// end-to-end receipts (messages of [KindReceipt]).
const CapReceipts = "receipts-v1"

// Bounds of the capabilities extension on receipt; a list beyond them is
// ignored as if absent.
const (
	MaxCaps   = 16
	MaxCapLen = 64
)

// capsBytes returns what the capabilities signature covers.
func capsBytes(mainSig []byte, caps []string) []byte {
	b := make([]byte, 0, len(CapsDomain)+SignatureSize+4+len(caps)*(4+MaxCapLen))
	b = append(b, CapsDomain...)
	b = append(b, mainSig...)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(caps)))
	for _, c := range caps {
		b = appendLP(b, c)
	}
	return b
}

// AnnounceCaps returns [Signer.Announce] with the capabilities caps added
// and signed (an empty list is a signed statement that the session accepts
// nothing beyond the original's format). Receivers that do not know the
// extension see the same announcement as Announce makes.
func (s *Signer) AnnounceCaps(name string, sess SessionInfo, ts uint64, caps []string) Announcement {
	a := s.Announce(name, sess, ts)
	sig, _ := DecodeBase64(a.Sig) // just encoded
	a.Caps = append([]string{}, caps...)
	a.CapsSig = EncodeBase64(s.Sign(capsBytes(sig, a.Caps)))
	return a
}

// VerifiedCaps returns the capabilities of a when its main signature and
// its capabilities signature both verify; ok is false when a carries no
// signed list (absent, unsigned, wrongly signed, or over [MaxCaps] entries
// of [MaxCapLen] bytes). A relay can strip the list, but not add to it,
// change it or move it from another announcement.
func (a *Announcement) VerifiedCaps() (caps []string, ok bool) {
	if a.CapsSig == "" || len(a.Caps) > MaxCaps {
		return nil, false
	}
	for _, c := range a.Caps {
		if len(c) > MaxCapLen {
			return nil, false
		}
	}
	key, err := a.Verify()
	if err != nil {
		return nil, false
	}
	mainSig, err := DecodeBase64(a.Sig)
	if err != nil {
		return nil, false
	}
	sig, err := DecodeBase64(a.CapsSig)
	if err != nil || !VerifyStrict(key[:], capsBytes(mainSig, a.Caps), sig) {
		return nil, false
	}
	return a.Caps, true
}

// HasCap reports whether caps lists c.
func HasCap(caps []string, c string) bool {
	for _, x := range caps {
		if x == c {
			return true
		}
	}
	return false
}

// announceBytes returns the signed encoding:
//
//	"interlink-announce-v1\x00" ‖ pubkey(32) ‖ LP(name) ‖ LP(session_id) ‖
//	LP(cwd) ‖ LP(git_root) ‖ LP(summary) ‖ u64le(ts)
//
// Unlike in messages, ts comes last.
func announceBytes(pub []byte, name string, s SessionInfo, ts uint64) []byte {
	b := make([]byte, 0, len(AnnounceDomain)+KeySize+5*4+len(name)+len(s.SessionID)+len(s.Cwd)+len(s.GitRoot)+len(s.Summary)+8)
	b = append(b, AnnounceDomain...)
	b = append(b, pub...)
	for _, v := range [...]string{name, s.SessionID, s.Cwd, s.GitRoot, s.Summary} {
		b = appendLP(b, v)
	}
	return binary.LittleEndian.AppendUint64(b, ts)
}

// SigningBytes parses the key of a and returns the bytes its signature
// covers.
func (a *Announcement) SigningBytes() ([]byte, error) {
	k, err := ParsePublicKey(a.PubKey)
	if err != nil {
		return nil, err
	}
	for _, f := range [...]string{a.Name, a.Session.SessionID, a.Session.Cwd, a.Session.GitRoot, a.Session.Summary} {
		if uint64(len(f)) > 1<<32-1 {
			return nil, ErrFieldTooLong
		}
	}
	return announceBytes(k[:], a.Name, a.Session, a.TS), nil
}

// Announce returns an announcement of the signer's key under the roster name
// name, signed at ts (Unix milliseconds).
func (s *Signer) Announce(name string, sess SessionInfo, ts uint64) Announcement {
	return Announcement{
		PubKey:  s.pub.String(),
		Name:    name,
		Session: sess,
		TS:      ts,
		Sig:     EncodeBase64(s.Sign(announceBytes(s.pub[:], name, sess, ts))),
	}
}

// Verify checks the signature of a with [VerifyStrict] under its own pubkey
// and returns that key. No freshness check applies to announcements. Every
// error wraps [ErrSignature].
func (a *Announcement) Verify() (PublicKey, error) {
	msg, err := a.SigningBytes()
	if err != nil {
		return PublicKey{}, fmt.Errorf("%w: %w", ErrSignature, err)
	}
	sig, err := DecodeBase64(a.Sig)
	if err != nil {
		return PublicKey{}, fmt.Errorf("%w: sig: %w", ErrSignature, err)
	}
	if !VerifyStrict(msg[len(AnnounceDomain):len(AnnounceDomain)+KeySize], msg, sig) {
		return PublicKey{}, ErrSignature
	}
	var k PublicKey
	copy(k[:], msg[len(AnnounceDomain):])
	return k, nil
}

// MarshalJSON writes a without HTML escaping.
func (a Announcement) MarshalJSON() ([]byte, error) {
	type plain Announcement // drops the method, keeps the tags
	return Marshal(plain(a))
}

// UnmarshalJSON decodes an announcement strictly; every error wraps
// [ErrDecode]. pubkey, name, ts and sig are required; an absent session means
// an empty one; inside it session_id is required and the other fields
// default to empty. caps and caps_sig are read when well-formed and
// otherwise dropped (see [Announcement.VerifiedCaps]). Unknown keys,
// among them title and title_sig, are
// ignored.
func (a *Announcement) UnmarshalJSON(data []byte) error {
	f, err := decodeObject(data)
	if err != nil {
		return err
	}
	var out Announcement
	if out.PubKey, err = f.str("pubkey", true); err != nil {
		return err
	}
	if out.Name, err = f.str("name", true); err != nil {
		return err
	}
	if out.Sig, err = f.str("sig", true); err != nil {
		return err
	}
	if out.TS, _, err = f.u64("ts", true); err != nil {
		return err
	}
	age, ok, err := f.u64("age_ms", false)
	if err != nil {
		return err
	}
	if ok {
		out.AgeMS = &age
	}
	out.Caps, out.CapsSig = decodeCaps(f)
	if raw, ok := f["session"]; ok {
		if out.Session, err = decodeSession(raw); err != nil {
			return err
		}
	}
	*a = out
	return nil
}

// decodeCaps reads the capabilities extension. A list or signature of
// another shape is dropped as if absent, so that junk added to an
// announcement never hides the announcement itself.
func decodeCaps(f fields) ([]string, string) {
	sig, err := f.str("caps_sig", false)
	if err != nil || sig == "" {
		return nil, ""
	}
	raw, ok := f["caps"]
	if !ok { // an empty list is written without the key
		return []string{}, sig
	}
	var caps []string
	if err := json.Unmarshal(raw, &caps); err != nil || caps == nil {
		return nil, ""
	}
	return caps, sig
}

func decodeSession(raw json.RawMessage) (SessionInfo, error) {
	var s SessionInfo
	f, err := decodeObject(raw)
	if err != nil {
		return s, fmt.Errorf("session: %w", err)
	}
	if s.SessionID, err = f.str("session_id", true); err != nil {
		return s, err
	}
	if s.Cwd, err = f.str("cwd", false); err != nil {
		return s, err
	}
	if s.GitRoot, err = f.str("git_root", false); err != nil {
		return s, err
	}
	if s.Summary, err = f.str("summary", false); err != nil {
		return s, err
	}
	return s, nil
}

// DecodeAnnouncement decodes one announcement, as
// [Announcement.UnmarshalJSON].
func DecodeAnnouncement(data []byte) (Announcement, error) {
	var a Announcement
	err := a.UnmarshalJSON(data)
	return a, err
}
