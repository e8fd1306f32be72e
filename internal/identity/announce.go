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
type Announcement struct {
	PubKey  string      `json:"pubkey"`
	Name    string      `json:"name"`
	Session SessionInfo `json:"session"`
	TS      uint64      `json:"ts"`
	Sig     string      `json:"sig"`
	AgeMS   *uint64     `json:"age_ms,omitempty"`
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
// default to empty. Unknown keys, among them title and title_sig, are
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
	if raw, ok := f["session"]; ok {
		if out.Session, err = decodeSession(raw); err != nil {
			return err
		}
	}
	*a = out
	return nil
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
