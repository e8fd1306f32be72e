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
// trimmed, and what is left is compared without regard to case. "SELF",
// "Ｉｎｔｅｒｌｉｎｋ", "Inter\u200blink" and "<self>" are all reserved.
func IsReserved(name string) bool {
	f := reservedForm(name)
	return strings.EqualFold(f, protocol.SelfSender) || strings.EqualFold(f, protocol.SystemSender)
}

// reservedForm returns name as [IsReserved] compares it.
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
