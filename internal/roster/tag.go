package roster

import (
	"encoding/binary"
	"encoding/hex"
	"hash/maphash"
	"io"
	"sort"
	"strings"

	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/wire"
)

// rosterSeed keys every roster hash of this process. It is random, so
// nobody who reads the roster can make two listings share a tag, and the
// tags of one process mean nothing to another: a client that revalidates
// against a restarted bus, or another bus of a shared roster, gets the
// whole listing once.
var rosterSeed = maphash.MakeSeed()

// fieldsSum returns the hash of an entry's fields as a listing serves them.
func fieldsSum(fields []byte) uint64 { return maphash.Bytes(rosterSeed, fields) }

// listingTag returns the entity tag of a /roster answer made of items: a
// hash of each item's fields and receipt time, in order. Two answers with
// the same tag list the same entries, announced at the same moments, so
// they differ only in the ages, which a client that kept the first can
// advance by the time that passed. That is why the tag is weak (W/): the
// bytes differ, the meaning does not.
func listingTag(items []item) string {
	var h maphash.Hash
	h.SetSeed(rosterSeed)
	var b [16]byte
	for _, it := range items {
		binary.LittleEndian.PutUint64(b[:8], it.sum)
		binary.LittleEndian.PutUint64(b[8:], uint64(it.at))
		_, _ = h.Write(b[:])
	}
	var sum [8]byte
	binary.BigEndian.PutUint64(sum[:], h.Sum64())
	return `W/"r` + hex.EncodeToString(sum[:]) + `"`
}

// Listing is one /roster answer: the entries it lists, with the fields it
// serves of each, at one moment. Make it with [Snapshot.Listing].
type Listing struct {
	items []item
	now   int64
	tag   string
}

// Listing returns the answer a /roster request at now (Unix ms) gets from
// the snapshot: the entries requester (nil when unsigned) may see, only
// those of keys unless keys is nil. With private set (a bus that requires
// signatures) each entry shows its details only to its own key and the
// readers it names, and to everyone else its public variant if it is
// discoverable, or nothing (see entryPrivacy).
//
// The answer's tag is that of the listing this requester gets, so on a bus
// that requires signatures an entry hidden from the requester never
// changes its tag: a stranger cannot learn when a private session
// announces. Without that requirement everyone gets the same listing, and
// a listing of the whole roster with nothing expired, the common case,
// takes the snapshot's items and its tag, both made once per change of
// the roster.
func (snap *Snapshot) Listing(keys []string, requester *identity.PublicKey, private bool, now int64) *Listing {
	if keys == nil && !private && (len(snap.items) == 0 || age(snap.oldest, now) < retainMs) {
		return &Listing{items: snap.items, now: now, tag: snap.tag}
	}
	var from []item
	if keys == nil {
		from = snap.items
	} else {
		from = snap.ofKeys(keys)
	}
	items := make([]item, 0, len(from))
	for _, it := range from {
		if age(it.at, now) >= retainMs {
			continue
		}
		if private {
			f, sum := privacyOf(it.entry).fieldsFor(requester)
			if f == nil {
				continue
			}
			it.fields, it.sum = f, sum
		}
		items = append(items, it)
	}
	return &Listing{items: items, now: now, tag: listingTag(items)}
}

// ofKeys returns the items whose pubkey member is one of keys (sorted,
// canonical), in roster key order. An entry's roster key is its pubkey,
// or its pubkey, "#" and its session id, so the entries of one key sit
// together in the sorted snapshot and two binary searches find them,
// whatever else the roster holds.
func (snap *Snapshot) ofKeys(keys []string) []item {
	var out []item
	search := func(k string) int {
		return sort.Search(len(snap.items), func(i int) bool { return snap.items[i].entry.key >= k })
	}
	for _, k := range keys {
		if i := search(k); i < len(snap.items) && snap.items[i].entry.key == k {
			out = append(out, snap.items[i])
		}
		prefix := k + "#"
		for i := search(prefix); i < len(snap.items) && strings.HasPrefix(snap.items[i].entry.key, prefix); i++ {
			out = append(out, snap.items[i])
		}
	}
	return out
}

// Tag returns the listing's weak entity tag ([listingTag]).
func (l *Listing) Tag() string { return l.tag }

// Matches reports whether the If-None-Match header values name the
// listing's tag, by the weak comparison RFC 9110 prescribes for
// If-None-Match: "W/" is ignored on both sides, and "*" matches any
// listing.
func (l *Listing) Matches(ifNoneMatch []string) bool {
	tag := strings.TrimPrefix(l.tag, "W/")
	for _, v := range ifNoneMatch {
		for t := range strings.SplitSeq(v, ",") {
			t = strings.TrimSpace(t)
			if t == "*" || strings.TrimPrefix(t, "W/") == tag {
				return true
			}
		}
	}
	return false
}

// Len returns the length of the listing's JSON answer in bytes, which
// [Listing.WriteTo] writes: every live announcement as it was sent, with
// "age_ms" set to the time since it arrived (replacing any age_ms the
// sender put in).
func (l *Listing) Len() int {
	n, live := len(wire.RosterOpen)+len(wire.RosterClose), 0
	for _, it := range l.items {
		a := age(it.at, l.now)
		if a >= retainMs {
			continue
		}
		n += wire.RosterEntryLen(live == 0, a, len(it.fields))
		live++
	}
	return n
}

// entryClose ends one entry of a listing.
var entryClose = []byte(wire.RosterEntryClose)

// WriteTo writes the listing's JSON answer to w, piece by piece: each
// entry's fields were encoded once, when it was announced, and a listing
// only splices the ages in, so however many clients list a full roster at
// once, each costs little more than its connection, never a copy of the
// roster. It stops at the first error of w.
func (l *Listing) WriteTo(w io.Writer) (int64, error) {
	n, err := io.WriteString(w, wire.RosterOpen)
	total := int64(n)
	if err != nil {
		return total, err
	}
	var scratch [len(`,{"age_ms":,`) + 20]byte
	first := true
	for _, it := range l.items {
		a := age(it.at, l.now)
		if a >= retainMs {
			continue
		}
		b := wire.AppendRosterEntryHead(scratch[:0], first, a, len(it.fields) > 0)
		first = false
		for _, part := range [...][]byte{b, it.fields, entryClose} {
			n, err := w.Write(part)
			total += int64(n)
			if err != nil {
				return total, err
			}
		}
	}
	n, err = io.WriteString(w, wire.RosterClose)
	return total + int64(n), err
}
