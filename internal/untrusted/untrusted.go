// Package untrusted cleans text that other parties supply before it is
// stored, compared or shown: the name claimed in a pairing request, roster
// names, session summaries, and working-directory and git labels.
//
// A signature on such text proves only which key claimed it, not that it is
// harmless. Left raw, a line break could forge an extra line in a listing, a
// bidirectional override could make a name read differently from its bytes,
// and a zero-width character or a Hangul filler could make two names look
// alike. [Clean] removes those characters; [Name], [Summary] and [Label] also bound the
// length; [Quote] renders a value inside prose so that it cannot pass for
// markup.
//
// Values are stored and matched in cleaned form, so the same input always
// compares equal to itself after a round trip through storage.
package untrusted

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/interlink-go/interlink/internal/lookalike"
)

// Length bounds applied after [Clean].
const (
	// NameLimit is the most characters (Unicode code points) kept by [Name].
	NameLimit = 64
	// SummaryLimit is the most characters (Unicode code points) kept by
	// [Summary].
	SummaryLimit = 200
	// LabelLimit is the most bytes kept by [Label]. The cut never splits a
	// character.
	LabelLimit = 256
)

// Clean returns s made safe to store and display, without bounding its
// length. In order, it:
//
//  1. replaces each run of invalid UTF-8 bytes with U+FFFD;
//  2. removes every character in Unicode category Cc (controls: C0 including
//     tab, CR and LF, DEL, and C1) or Cf (format characters: bidirectional
//     embeddings, overrides and isolates such as U+202E, zero-width
//     characters such as U+200B and U+200D, the byte order mark U+FEFF, and
//     tag characters), every other character drawn as nothing
//     ([lookalike.Ignorable]: variation selectors, the Hangul fillers such
//     as U+3164, the combining grapheme joiner), and the line and paragraph
//     separators U+2028 and U+2029;
//  3. trims leading and trailing white space.
//
// Characters are removed, not replaced by a space, so "a\nb" becomes "ab".
// Removing U+200D and the variation selectors also splits joined emoji
// sequences into their parts and may show an emoji in its text style; that
// is the price of not letting invisible characters into names.
//
// Clean is idempotent: Clean(Clean(s)) == Clean(s).
func Clean(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.Map(func(r rune) rune {
		if removed(r) {
			return -1
		}
		return r
	}, s)
	return strings.TrimSpace(s)
}

// removed reports whether [Clean] drops r.
func removed(r rune) bool {
	return unicode.In(r, unicode.Cc, unicode.Cf) || lookalike.Ignorable(r) || r == '\u2028' || r == '\u2029'
}

// Name cleans s with [Clean] and keeps at most [NameLimit] characters. It is
// meant for display names: the name claimed in a pairing request and the
// names on the presence roster.
func Name(s string) string {
	return CapRunes(Clean(s), NameLimit)
}

// Summary cleans s with [Clean] and keeps at most [SummaryLimit] characters.
// It is meant for the free-text summary a session announces.
func Summary(s string) string {
	return CapRunes(Clean(s), SummaryLimit)
}

// Label cleans s with [Clean] and keeps at most [LabelLimit] bytes, cutting
// before any character that would not fit whole. It is meant for the
// working-directory and git labels a session announces.
func Label(s string) string {
	return capBytes(Clean(s), LabelLimit)
}

// CapRunes returns the first n characters (code points) of s, trimmed
// again so that a cut never leaves white space at the end. A string of at
// most n characters is returned as it is.
func CapRunes(s string, n int) string {
	count := 0
	for i := range s {
		if count == n {
			return strings.TrimSpace(s[:i])
		}
		count++
	}
	return s
}

// capBytes returns the longest prefix of s of at most n bytes that ends on a
// character boundary, trimmed again so a cut never leaves white space at the
// end. s must be valid UTF-8.
func capBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return strings.TrimSpace(s[:i])
}

// quoteReplacer escapes the quoting characters and swaps the angle brackets
// for their fullwidth forms.
var quoteReplacer = strings.NewReplacer(
	`\`, `\\`,
	`"`, `\"`,
	"<", "\uFF1C", // FULLWIDTH LESS-THAN SIGN
	">", "\uFF1E", // FULLWIDTH GREATER-THAN SIGN
)

// Quote renders s for display inside prose, such as a notice that shows the
// name a stranger claimed: it applies [Clean] (without a length bound; bound
// the value first with [Name], [Summary] or [Label]) and wraps the result in
// double quotes.
//
// Inside the quotes, a backslash becomes `\\` and a double quote becomes
// `\"`, so the value cannot end the quoted string early or close a
// double-quoted attribute it is placed in. The angle brackets "<" and ">"
// are replaced by their fullwidth forms U+FF1C and U+FF1E rather than
// escaped: the text stays readable to a person or a model, yet can never
// open or close an <interlink ...> block or any other tag. Every other
// character is kept as is; since [Clean] has removed all control
// characters, the result is also a valid Go string literal, and
// strconv.Unquote recovers the cleaned value with the brackets swapped.
func Quote(s string) string {
	return `"` + quoteReplacer.Replace(Clean(s)) + `"`
}
