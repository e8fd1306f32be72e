package roster

import (
	"encoding/json"

	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/wire"
)

// entryPrivacy is what a bus that requires signatures
// serves of one roster entry, per requester. It is derived from the
// entry's fields alone, the first time a listing needs it, so an entry
// that came through a shared roster from another bus is served by the
// same rules: the record carries the whole announcement, extension
// included, and every bus verifies it again here.
//
//   - The entry's own key, and the readers its verified privacy extension
//     names ([identity.Private.Reads]), get full: the announcement as it
//     was sent, less the extension's members.
//   - Everyone else gets public, the public variant the extension signs,
//     when the session is discoverable, and nothing otherwise.
//   - An entry without a verified extension has no readers and no public
//     variant: only its own key sees it.
type entryPrivacy struct {
	owner  string            // the pubkey member
	p      *identity.Private // nil without a verified extension
	full   []byte            // fields without the extension's members
	public []byte            // fields of the public variant, or nil
	// fullSum and publicSum are fieldsSum of full and public.
	fullSum, publicSum uint64
}

// privacyOf returns the privacy view of e, deriving it on first use.
func privacyOf(e *Entry) *entryPrivacy {
	if v := e.priv.Load(); v != nil {
		return v
	}
	v := newPrivacy(e.fields)
	v.fullSum, v.publicSum = fieldsSum(v.full), fieldsSum(v.public)
	e.priv.CompareAndSwap(nil, v)
	return e.priv.Load()
}

// newPrivacy derives the privacy view of an entry's fields.
func newPrivacy(fields []byte) *entryPrivacy {
	obj := make([]byte, 0, len(fields)+2)
	obj = append(append(append(obj, '{'), fields...), '}')
	v := &entryPrivacy{full: fields}
	var m map[string]json.RawMessage
	if json.Unmarshal(obj, &m) != nil {
		return v
	}
	if raw, ok := m["pubkey"]; !ok || json.Unmarshal(raw, &v.owner) != nil {
		return v
	}
	_, p, present, err := identity.DecodePrivate(obj)
	if !present || err != nil {
		return v
	}
	for _, k := range identity.PrivateMembers {
		delete(m, k)
	}
	full, err := identity.Marshal(m)
	if err != nil {
		return v
	}
	v.p, v.full = p, full[1:len(full)-1]
	if p.Discoverable {
		if pub, err := identity.Marshal(p.Public); err == nil {
			if a, err := wire.DecodeAnnounce(pub); err == nil {
				v.public = a.Fields
			}
		}
	}
	return v
}

// fieldsFor returns what requester (nil when the request is unsigned)
// sees of the entry, with its fieldsSum: its full fields, its public
// variant, or nil for nothing.
func (v *entryPrivacy) fieldsFor(requester *identity.PublicKey) ([]byte, uint64) {
	if requester != nil {
		if v.p != nil && v.p.Reads(*requester) {
			return v.full, v.fullSum
		}
		if v.p == nil && requester.String() == v.owner {
			return v.full, v.fullSum
		}
	}
	return v.public, v.publicSum
}

// Public returns the fields of the entry's public variant, which a bus
// that requires signatures serves to everyone but the entry's own key and
// its readers: nil unless the entry carries a verified privacy extension
// that makes it discoverable.
func (e *Entry) Public() []byte { return privacyOf(e).public }
