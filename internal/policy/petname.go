package policy

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/interlink-go/interlink/internal/lookalike"
	"github.com/interlink-go/interlink/internal/protocol"
	"github.com/interlink-go/interlink/internal/untrusted"
)

// PetnameLimit is the most characters (Unicode code points) a petname may
// have.
const PetnameLimit = untrusted.NameLimit

// CheckPetname returns nil when name may be a petname. Otherwise it returns
// a [*PetnameError], wrapped, that matches [ErrInvalidName] or
// [ErrReservedName] and says why.
//
// A petname is shown to the model as the sender of a message, verbatim: the
// renderer refuses to write a sender it would have to change. So a petname
// holds only characters rendering keeps as they are. It is refused when:
//
//   - it is empty, not valid UTF-8, or longer than [PetnameLimit]
//     characters;
//   - it starts or ends with white space;
//   - it holds a character that rendering would change or drop: one of
//     " ' < > & and `, a control or format character (Unicode Cc or Cf,
//     which covers bidirectional overrides and zero-width characters), a
//     character drawn as nothing ([lookalike.Ignorable], such as the
//     Hangul filler U+3164), or the separators U+2028 and U+2029;
//   - [IsReserved] reports it.
func CheckPetname(name string) error {
	if pe := checkPetname(name); pe != nil {
		return fmt.Errorf("policy: %w", pe)
	}
	return nil
}

// checkPetname is [CheckPetname] returning the [*PetnameError] itself.
func checkPetname(name string) *PetnameError {
	invalid := func(format string, args ...any) *PetnameError {
		return &PetnameError{Name: name, Reason: fmt.Sprintf(format, args...)}
	}
	switch {
	case name == "":
		return invalid("empty")
	case !utf8.ValidString(name):
		return invalid("not valid UTF-8")
	case utf8.RuneCountInString(name) > PetnameLimit:
		return invalid("longer than %d characters", PetnameLimit)
	}
	first, _ := utf8.DecodeRuneInString(name)
	last, _ := utf8.DecodeLastRuneInString(name)
	if unicode.IsSpace(first) || unicode.IsSpace(last) {
		return invalid("leading or trailing white space")
	}
	for _, r := range name {
		if lookalike.Ignorable(r) && !unicode.Is(unicode.Cf, r) {
			return invalid("holds %U, which is drawn as nothing", r)
		}
		if renderUnsafe(r) {
			return invalid("holds %U, which rendering would change or drop", r)
		}
	}
	if IsReserved(name) {
		return &PetnameError{Name: name, Reserved: true, Reason: fmt.Sprintf(
			"%s and %s name our own identity and interlink's notices, in any case or spelling",
			protocol.SelfSender, protocol.SystemSender)}
	}
	return nil
}

// renderUnsafe reports whether r may not appear in a petname: rendering
// would change or drop it, or it is drawn as nothing
// ([lookalike.Ignorable]: zero-width and tag characters, variation
// selectors, the Hangul fillers).
func renderUnsafe(r rune) bool {
	switch r {
	case '"', '\'', '<', '>', '&', '`', '\u2028', '\u2029':
		return true
	}
	return unicode.In(r, unicode.Cc, unicode.Cf) || lookalike.Ignorable(r)
}

// IsReserved reports whether name reads as "self" or "Interlink", in any
// case and any disguise: [lookalike.Spells] decides, on the letters and
// digits a reader takes in. Compatibility forms count as the plain letters
// they look like, invisible characters, marks, white space, punctuation
// and symbols do not count, and every letter counts as the letter UTS #39
// says it is drawn like, in either case, with one letter of the word
// allowed to be any letter outside ASCII. "SELF", "Ｉｎｔｅｒｌｉｎｋ",
// "Inter\u200blink", "<self>", "lnterlink" (a small L for the capital I),
// "\u0406nterlink" (a Cyrillic І), "\uA4E2ELF" (a Lisu ꓢ) and "Interlin\u0138"
// (a kra) are all reserved; "Seif" and "self-2" are not.
func IsReserved(name string) bool {
	return lookalike.Spells(name, protocol.SelfSender) || lookalike.Spells(name, protocol.SystemSender)
}

// Resembles returns the entry of p whose petname reads alike name
// ([lookalike.Alike]: the same letters and digits as drawn, in some case),
// the first in petname order, and whether there is one. An entry named
// name exactly resembles it too.
func (p *Policy) Resembles(name string) (Entry, bool) {
	if k, ok := p.byName[name]; ok {
		return Entry{Name: name, Key: k}, true
	}
	for _, e := range p.Entries() {
		if lookalike.Alike(name, e.Name) {
			return e, true
		}
	}
	return Entry{}, false
}

// ReducePetname turns a name someone else chose, such as the name a
// stranger claims in a pairing request, into a petname candidate: it cleans
// the name with [untrusted.Clean], removes every character [CheckPetname]
// refuses, trims white space and keeps at most [PetnameLimit] characters.
//
// The result is empty or passes [CheckPetname] unless it is reserved; the
// caller checks [IsReserved] and falls back to something else (the key's
// fingerprint) in that case.
func ReducePetname(claimed string) string {
	s := strings.Map(func(r rune) rune {
		if renderUnsafe(r) {
			return -1
		}
		return r
	}, untrusted.Clean(claimed))
	return untrusted.CapRunes(strings.TrimSpace(s), PetnameLimit)
}
