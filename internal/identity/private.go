package identity

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
)

// The privacy extension of an announcement says who may read its details
// (working directory, git label, summary) on a relay that serves the
// roster per requester, and carries the signature of a public variant of
// the same announcement for everyone else:
//
//	readers          reader tags, at most [MaxReaders] ([ReaderTag])
//	discoverable     true when the public variant may be shown to anyone
//	public_sig       the main signature of the public variant: the same
//	                 pubkey, name, session_id and ts with empty cwd,
//	                 git_root and summary
//	public_caps_sig  the capabilities signature of the public variant
//	                 (over public_sig and the same caps), when caps are
//	                 announced
//	private_sig      the key's signature over
//	                 "interlink-announce-private-v1\x00" ‖ sig(64) ‖
//	                 public_sig(64) ‖ u8(discoverable) ‖ u32le(n) ‖
//	                 tag_1 … tag_n (12 bytes each)
//
// where sig is the raw main signature of the announcement, so the
// extension cannot be moved to another announcement, session or key, nor
// its list or flag changed. The public variant is an announcement in the
// original's format, which every client verifies as it verifies any.
const (
	PrivateDomain = "interlink-announce-private-v1\x00"
	// ReaderDomain starts what a reader tag hashes.
	ReaderDomain = "interlink-announce-reader-v1\x00"
	// ReaderTagSize is the length of one reader tag in bytes.
	ReaderTagSize = 12
	// MaxReaders is the most readers one announcement names: 64 tags
	// cost about 1.2 KiB of the 4 KiB an announcement may take.
	MaxReaders = 64
)

// ErrPrivate means an announcement's privacy extension is malformed or
// does not verify.
var ErrPrivate = errors.New("identity: privacy extension")

// PrivateError reports an announcement whose privacy extension is
// incomplete, malformed or does not verify. It wraps [ErrPrivate] and
// Err, what is wrong with the extension.
type PrivateError struct {
	Err error
}

func (e *PrivateError) Error() string { return ErrPrivate.Error() + ": " + e.Reason() }

// Reason returns what is wrong with the extension, without the
// "identity: privacy extension: " that Error puts first.
func (e *PrivateError) Reason() string { return e.Err.Error() }

// Unwrap returns [ErrPrivate] and Err.
func (e *PrivateError) Unwrap() []error { return []error{ErrPrivate, e.Err} }

// ReaderTag returns the tag that names reader in the readers list of the
// announcement whose raw main signature is mainSig: the first
// [ReaderTagSize] bytes of SHA-256(ReaderDomain ‖ mainSig ‖ reader). A
// relay that knows a requester's key recomputes it to decide; anyone else
// reading the list learns how many readers there are, and whether a key
// they already hold is one of them, but not the keys. Since the main
// signature changes with every announcement, tags of two announcements
// cannot be linked.
func ReaderTag(mainSig []byte, reader PublicKey) [ReaderTagSize]byte {
	h := sha256.New()
	h.Write([]byte(ReaderDomain))
	h.Write(mainSig)
	h.Write(reader[:])
	var t [ReaderTagSize]byte
	copy(t[:], h.Sum(nil))
	return t
}

// privateBytes returns what private_sig covers.
func privateBytes(mainSig, publicSig []byte, discoverable bool, tags [][ReaderTagSize]byte) []byte {
	b := make([]byte, 0, len(PrivateDomain)+2*SignatureSize+5+len(tags)*ReaderTagSize)
	b = append(b, PrivateDomain...)
	b = append(b, mainSig...)
	b = append(b, publicSig...)
	if discoverable {
		b = append(b, 1)
	} else {
		b = append(b, 0)
	}
	b = binary.LittleEndian.AppendUint32(b, uint32(len(tags)))
	for _, t := range tags {
		b = append(b, t[:]...)
	}
	return b
}

// PublicInfo returns the session descriptor of the public variant of an
// announcement of s: its session id alone.
func PublicInfo(s SessionInfo) SessionInfo { return SessionInfo{SessionID: s.SessionID} }

// AnnouncePrivate returns [Signer.AnnounceCaps] (or [Signer.Announce] when
// caps is nil) with the privacy extension added: readers (at most
// [MaxReaders] of them, the signer's own key and repeats skipped) may read
// the details, and everyone else sees the public variant when discoverable
// is true, nothing otherwise. Receivers that do not know the extension
// see the same announcement as without it.
func (s *Signer) AnnouncePrivate(name string, sess SessionInfo, ts uint64, caps []string, readers []PublicKey, discoverable bool) Announcement {
	a := s.Announce(name, sess, ts)
	pub := s.Announce(name, PublicInfo(sess), ts)
	if caps != nil {
		a = s.AnnounceCaps(name, sess, ts, caps)
		pub = s.AnnounceCaps(name, PublicInfo(sess), ts, caps)
		a.PublicCapsSig = pub.CapsSig
	}
	mainSig, _ := DecodeBase64(a.Sig)     // just encoded
	publicSig, _ := DecodeBase64(pub.Sig) // just encoded
	seen := map[PublicKey]bool{s.pub: true}
	var tags [][ReaderTagSize]byte
	a.Readers = []string{}
	for _, r := range readers {
		if seen[r] || len(tags) == MaxReaders {
			continue
		}
		seen[r] = true
		t := ReaderTag(mainSig, r)
		tags = append(tags, t)
		a.Readers = append(a.Readers, EncodeBase64(t[:]))
	}
	a.Discoverable = discoverable
	a.PublicSig = pub.Sig
	a.PrivateSig = EncodeBase64(s.Sign(privateBytes(mainSig, publicSig, discoverable, tags)))
	return a
}

// Private is a verified privacy extension: what a relay needs to serve an
// announcement per requester.
type Private struct {
	// Key is the announcement's key.
	Key PublicKey
	// Discoverable says whether Public may be shown to anyone.
	Discoverable bool
	// Public is the public variant, verified: the same announcement with
	// empty cwd, git_root and summary, its own main signature, and the
	// capabilities when they are signed for it too.
	Public  Announcement
	mainSig []byte
	tags    map[[ReaderTagSize]byte]bool
}

// Reads reports whether k may read the details: it is the announcement's
// own key or one of its readers.
func (p *Private) Reads(k PublicKey) bool {
	return k == p.Key || p.tags[ReaderTag(p.mainSig, k)]
}

// PrivateMembers are the JSON members of the privacy extension.
var PrivateMembers = [...]string{"readers", "discoverable", "public_sig", "public_caps_sig", "private_sig"}

// DecodePrivate decodes the announcement in data and its privacy
// extension and verifies both. present is false when data has none of
// the extension's members; err is then nil if the announcement itself
// decodes and verifies. An extension that is incomplete, malformed or
// does not verify is a [*PrivateError], which wraps [ErrPrivate], unlike the
// capabilities list, which clients drop quietly: a relay refuses such an
// announcement rather than guess who may read it.
func DecodePrivate(data []byte) (a Announcement, p *Private, present bool, err error) {
	if a, err = DecodeAnnouncement(data); err != nil {
		return a, nil, false, err
	}
	key, err := a.Verify()
	if err != nil {
		return a, nil, false, err
	}
	f, err := decodeObject(data)
	if err != nil {
		return a, nil, false, err
	}
	for _, m := range PrivateMembers {
		if _, ok := f[m]; ok {
			present = true
		}
	}
	if !present {
		return a, nil, false, nil
	}
	p, err = decodePrivate(f, &a, key)
	if err != nil {
		return a, nil, true, &PrivateError{Err: err}
	}
	return a, p, true, nil
}

func decodePrivate(f fields, a *Announcement, key PublicKey) (*Private, error) {
	privateSig, err := sigMember(f, "private_sig", true)
	if err != nil {
		return nil, err
	}
	publicSig, err := sigMember(f, "public_sig", true)
	if err != nil {
		return nil, err
	}
	publicCapsSig, err := sigMember(f, "public_caps_sig", false)
	if err != nil {
		return nil, err
	}
	p := &Private{Key: key, tags: map[[ReaderTagSize]byte]bool{}}
	if raw, ok := f["discoverable"]; ok {
		if err := json.Unmarshal(raw, &p.Discoverable); err != nil || isNull(raw) {
			return nil, errors.New("discoverable is not true or false")
		}
	}
	var readers []string
	if raw, ok := f["readers"]; ok {
		if err := json.Unmarshal(raw, &readers); err != nil || readers == nil {
			return nil, errors.New("readers is not a list of strings")
		}
	}
	if len(readers) > MaxReaders {
		return nil, fmt.Errorf("%d readers, the most is %d", len(readers), MaxReaders)
	}
	tags := make([][ReaderTagSize]byte, len(readers))
	for i, r := range readers {
		b, err := DecodeBase64(r)
		if err != nil || len(b) != ReaderTagSize {
			return nil, fmt.Errorf("reader %d is not a %d-byte tag", i, ReaderTagSize)
		}
		copy(tags[i][:], b)
		p.tags[tags[i]] = true
	}
	p.mainSig, _ = DecodeBase64(a.Sig) // verified
	if !VerifyStrict(key[:], privateBytes(p.mainSig, publicSig, p.Discoverable, tags), privateSig) {
		return nil, errors.New("private_sig does not verify")
	}
	pub := Announcement{PubKey: a.PubKey, Name: a.Name, Session: PublicInfo(a.Session), TS: a.TS, Sig: EncodeBase64(publicSig)}
	if _, err := pub.Verify(); err != nil {
		return nil, errors.New("public_sig does not verify for the public variant")
	}
	if publicCapsSig != nil {
		caps, ok := a.VerifiedCaps()
		if !ok || !VerifyStrict(key[:], capsBytes(publicSig, caps), publicCapsSig) {
			return nil, errors.New("public_caps_sig does not verify")
		}
		pub.Caps = append([]string{}, caps...)
		pub.CapsSig = EncodeBase64(publicCapsSig)
	}
	p.Public = pub
	return p, nil
}

// sigMember reads the signature member name of f: a base64url string of
// [SignatureSize] bytes. An absent member is nil, or an error if required.
func sigMember(f fields, name string, required bool) ([]byte, error) {
	if _, ok := f[name]; !ok && !required {
		return nil, nil
	}
	s, err := f.str(name, true)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	b, err := DecodeBase64(s)
	if err != nil || len(b) != SignatureSize {
		return nil, fmt.Errorf("%s is not a %d-byte signature", name, SignatureSize)
	}
	return b, nil
}
