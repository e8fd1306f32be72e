package policy

import (
	"fmt"
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
// trimmed, and what is left is reduced to its look: accents dropped,
// letters of other scripts that look like Latin ones (Cyrillic "і",
// Greek "Τ", small capitals) taken for those, case ignored, and "I", "l",
// "1" and "|" counted as one letter, since many fonts draw them alike.
// "SELF", "Ｉｎｔｅｒｌｉｎｋ", "Inter\u200blink", "<self>", "lnterlink" and
// "\u0406nterlink" (Cyrillic І) are all reserved.
func IsReserved(name string) bool {
	f := lookalike(reservedForm(name))
	return f == reservedSelf || f == reservedSystem
}

// The reserved names as [lookalike] reduces them.
var (
	reservedSelf   = lookalike(protocol.SelfSender)
	reservedSystem = lookalike(protocol.SystemSender)
)

// reservedForm returns name as [IsReserved] compares it, before
// [lookalike].
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

// lookalikes maps letters that a reader takes for a letter of "self" or
// "interlink" to that Latin letter. Only those letters matter: a name that
// holds any other letter is not reserved whatever it looks like. Letters
// NFKC already maps (full-width, mathematical, the Kelvin sign, long s)
// need no entry.
var lookalikes = map[rune]rune{
	// i and what fonts draw like I or l; l itself becomes i in lookalike.
	'ı': 'i', 'ɪ': 'i', 'ɩ': 'i', 'ι': 'i', 'Ι': 'i', 'і': 'i', 'І': 'i',
	'ӏ': 'i', 'Ӏ': 'i', 'ǀ': 'i', '1': 'i', '|': 'i', 'ʟ': 'i',
	'ɴ': 'n', 'Ν': 'n', 'ո': 'n',
	'ᴛ': 't', 'Τ': 't', 'Т': 't', 'т': 't',
	'ᴇ': 'e', 'Ε': 'e', 'Е': 'e', 'е': 'e',
	'ʀ': 'r', 'г': 'r',
	'ᴋ': 'k', 'Κ': 'k', 'κ': 'k', 'К': 'k', 'к': 'k',
	'ꜱ': 's', 'Ѕ': 's', 'ѕ': 's',
	'ꜰ': 'f', 'Ϝ': 'f',
}

// lookalike reduces s to its look for [IsReserved]: accents and other
// combining marks dropped, the letters of lookalikes replaced, the rest
// in lower case, and l written as i.
func lookalike(s string) string {
	var b strings.Builder
	for _, r := range norm.NFD.String(s) {
		if unicode.Is(unicode.Mn, r) {
			continue
		}
		if l, ok := lookalikes[r]; ok {
			r = l
		} else {
			r = unicode.ToLower(r)
			if r == 'l' {
				r = 'i'
			}
		}
		b.WriteRune(r)
	}
	return b.String()
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
