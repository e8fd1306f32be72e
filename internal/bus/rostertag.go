package bus

import (
	"encoding/binary"
	"encoding/hex"
	"hash/maphash"
	"net/http"
	"sort"
	"strings"

	"github.com/interlink-go/interlink/internal/identity"
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
func listingTag(items []snapItem) string {
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

// tagMatches reports whether the If-None-Match header values name tag,
// by the weak comparison RFC 9110 prescribes for If-None-Match: "W/" is
// ignored on both sides, and "*" matches any listing.
func tagMatches(values []string, tag string) bool {
	tag = strings.TrimPrefix(tag, "W/")
	for _, v := range values {
		for t := range strings.SplitSeq(v, ",") {
			t = strings.TrimSpace(t)
			if t == "*" || strings.TrimPrefix(t, "W/") == tag {
				return true
			}
		}
	}
	return false
}

// rosterView returns the entries a /roster answer at now serves to
// requester (nil when unsigned), only those of keys unless keys is nil,
// and the answer's entity tag.
//
// The tag is that of the listing this requester gets, so on a bus that
// requires signatures an entry hidden from the requester never changes
// its tag: a stranger cannot learn when a private session announces.
// Without that requirement everyone gets the same listing, and a listing
// of the whole roster with nothing expired, the common case, takes the
// snapshot's items and its tag, both made once per change of the roster.
func (s *Server) rosterView(snap *rosterSnapshot, keys []string, requester *identity.PublicKey, now int64) ([]snapItem, string) {
	private := s.guard.mode == AuthRequired
	if keys == nil && !private && (len(snap.items) == 0 || age(snap.oldest, now) < rosterRetainMs) {
		return snap.items, snap.tag
	}
	var from []snapItem
	if keys == nil {
		from = snap.items
	} else {
		from = snap.ofKeys(keys)
	}
	items := make([]snapItem, 0, len(from))
	for _, it := range from {
		if age(it.at, now) >= rosterRetainMs {
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
	return items, listingTag(items)
}

// ofKeys returns the items whose pubkey member is one of keys (sorted,
// canonical), in roster key order. An entry's roster key is its pubkey,
// or its pubkey, "#" and its session id, so the entries of one key sit
// together in the sorted snapshot and two binary searches find them,
// whatever else the roster holds.
func (snap *rosterSnapshot) ofKeys(keys []string) []snapItem {
	var out []snapItem
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

// setRosterHeaders sets what every /roster answer carries besides its
// type and length: its tag, and a cache rule that makes a cache ask
// again before each reuse. On a bus that requires signatures each
// requester gets its own listing, which no shared cache may hand to
// another.
func (s *Server) setRosterHeaders(h http.Header, tag string) {
	h.Set("ETag", tag)
	if s.guard.mode == AuthRequired {
		h.Set("Cache-Control", "private, no-cache")
	} else {
		h.Set("Cache-Control", "no-cache")
	}
}
