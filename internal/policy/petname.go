package policy

import (
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

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
//     which covers bidirectional overrides and zero-width characters), or
//     the separators U+2028 and U+2029;
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
// would change or drop it.
func renderUnsafe(r rune) bool {
	switch r {
	case '"', '\'', '<', '>', '&', '`', '\u2028', '\u2029':
		return true
	}
	return unicode.In(r, unicode.Cc, unicode.Cf)
}

// IsReserved reports whether name is a spelling of "self" or "Interlink".
//
// The comparison is on the form a reader would see: name is brought to
// Unicode normalization form NFKC (so full-width letters and other
// compatibility forms become the plain letters they look like), the
// characters [CheckPetname] refuses are removed (so an invisible character
// or a quote inside the word does not hide it), surrounding white space is
// trimmed, and what is left is compared letter by letter, without regard to
// case, by the letter each one is drawn like ([LooksLike] tells how).
// "SELF", "Ｉｎｔｅｒｌｉｎｋ", "Inter\u200blink", "<self>", "lnterlink" (a
// small L for the capital I) and "\u0406nterlink" (a Cyrillic І) are all
// reserved; "Seif" is not.
func IsReserved(name string) bool {
	s := shape(reservedForm(name))
	return spells(s, protocol.SelfSender) || spells(s, protocol.SystemSender)
}

// reservedForm returns name as [IsReserved] compares it, before [shape].
func reservedForm(name string) string {
	s := norm.NFKC.String(strings.ToValidUTF8(name, ""))
	s = strings.Map(func(r rune) rune {
		if renderUnsafe(r) {
			return -1
		}
		return r
	}, s)
	return strings.TrimSpace(s)
}

// spells reports whether the shape s reads as word in any case: each of
// its letters is drawn like the letter of word, or like its capital.
func spells(s []rune, word string) bool {
	w := []rune(word)
	if len(s) != len(w) {
		return false
	}
	for i, g := range s {
		lower := unicode.ToLower(w[i])
		if g != glyph(lower) && g != glyph(unicode.ToUpper(lower)) {
			return false
		}
	}
	return true
}

// LooksLike reports whether petnames a and b look alike to a reader: the
// same letters once accents are dropped and letters of other scripts that
// are drawn like a Latin letter are taken for it (a Cyrillic "о" for "o",
// a Greek "Τ" for "T", a small L for a capital I, a digit 1 for either).
// Case counts: "Bob" and "bob" differ. It knows single letters only, not
// pairs such as "rn" for "m".
func LooksLike(a, b string) bool {
	return slices.Equal(shape(norm.NFKC.String(a)), shape(norm.NFKC.String(b)))
}

// shape returns the letters of s as they are drawn: accents and other
// combining marks dropped, each letter replaced by its [glyph].
func shape(s string) []rune {
	out := make([]rune, 0, len(s))
	for _, r := range norm.NFD.String(s) {
		if !unicode.Is(unicode.Mn, r) {
			out = append(out, glyph(r))
		}
	}
	return out
}

// glyph returns the Latin letter r is drawn like, keeping its case, or r
// itself. Capital I, small L, the digit 1 and the vertical bar are all
// drawn as a bar and share the glyph l.
func glyph(r rune) rune {
	if g, ok := lookalikes[r]; ok {
		return g
	}
	return r
}

// lookalikes maps letters and signs that are drawn like a Latin letter to
// that letter. Letters NFKC already maps (full-width, mathematical, the
// Kelvin sign, the long s) need no entry.
var lookalikes = map[rune]rune{
	// Drawn as a bar.
	'I': 'l', '1': 'l', '|': 'l', 'ǀ': 'l', 'Ι': 'l', 'І': 'l', 'Ӏ': 'l', 'ӏ': 'l', 'ɪ': 'l',
	// Drawn like a small i.
	'ı': 'i', 'ɩ': 'i', 'ι': 'i', 'і': 'i',
	// Cyrillic.
	'а': 'a', 'А': 'A', 'В': 'B', 'с': 'c', 'С': 'C', 'ԁ': 'd', 'е': 'e', 'Е': 'E',
	'һ': 'h', 'Һ': 'H', 'Н': 'H', 'ј': 'j', 'Ј': 'J', 'к': 'K', 'К': 'K', 'М': 'M',
	'о': 'o', 'О': 'O', 'р': 'p', 'Р': 'P', 'ԛ': 'q', 'Ԛ': 'Q', 'г': 'r', 'ѕ': 's',
	'Ѕ': 'S', 'т': 'T', 'Т': 'T', 'у': 'y', 'У': 'Y', 'Ү': 'Y', 'ԝ': 'w', 'Ԝ': 'W',
	'х': 'x', 'Х': 'X',
	// Greek.
	'Α': 'A', 'α': 'a', 'Β': 'B', 'ϲ': 'c', 'Ε': 'E', 'Ζ': 'Z', 'Η': 'H', 'Κ': 'K',
	'κ': 'K', 'Μ': 'M', 'Ν': 'N', 'ν': 'v', 'Ο': 'O', 'ο': 'o', 'Ρ': 'P', 'ρ': 'p',
	'Τ': 'T', 'Υ': 'Y', 'υ': 'u', 'Χ': 'X', 'χ': 'x', 'Ϝ': 'F',
	// Armenian.
	'ո': 'n', 'ս': 'u', 'օ': 'o', 'հ': 'h', 'զ': 'q',
	// Small capitals and other Latin letters.
	'ʟ': 'L', 'ɴ': 'N', 'ᴛ': 'T', 'ᴇ': 'E', 'ʀ': 'R', 'ᴋ': 'K', 'ꜱ': 's', 'ꜰ': 'F',
	'ᴏ': 'o', 'ᴄ': 'c', 'ᴀ': 'A', 'ʙ': 'B', 'ᴅ': 'D', 'ʜ': 'H', 'ᴊ': 'J', 'ᴍ': 'M',
	'ᴘ': 'P', 'ᴜ': 'u', 'ᴠ': 'v', 'ᴡ': 'w', 'ʏ': 'Y', 'ᴢ': 'z', 'ɡ': 'g', 'ɑ': 'a',
	// Digits drawn like letters.
	'0': 'O',
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
