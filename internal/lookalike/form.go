package lookalike

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"go.mau.fi/util/confusable"
	"golang.org/x/text/unicode/norm"
)

// Skeleton returns the UTS #39 skeleton of s as a reader sees it: s in
// normalization form NFKC, without its [Ignorable] characters, then
// skeletonized. Two texts with the same skeleton are drawn alike. The
// skeleton keeps case, white space, punctuation and symbols; [Form] keeps
// only letters and digits. It is for comparing, never for showing.
func Skeleton(s string) string {
	return confusable.Skeleton(stripIgnorable(norm.NFKC.String(s)))
}

// Form returns the letters and digits a reader takes in from s: s in
// normalization form NFKC, decomposed, without [Ignorable] characters and
// combining marks, each character replaced by its UTS #39 prototype (see
// [Skeleton]), and of the result only the letters and digits (Unicode L
// and N), in their case. Invalid UTF-8 counts as nothing.
//
// "Ｉｎｔｅｒ-ｌｉｎｋ", "Inter\u3164link" and "Int\u0435rlink" (a Cyrillic
// "е") all have the form "lnterlink", the form of "Interlink".
func Form(s string) string {
	return string(form(s))
}

// form is [Form] as runes.
func form(s string) []rune {
	var out []rune
	for _, r := range prepared(s) {
		out = appendPiece(out, r)
	}
	return out
}

// prepared returns s as [Form] reads it before the prototypes: valid UTF-8
// in NFKC, decomposed (NFD), without ignorable characters and combining
// marks.
func prepared(s string) string {
	s = norm.NFD.String(norm.NFKC.String(strings.ToValidUTF8(s, "")))
	return strings.Map(func(r rune) rune {
		if Ignorable(r) || unicode.Is(unicode.M, r) {
			return -1
		}
		return r
	}, s)
}

// stripIgnorable returns s without its [Ignorable] characters.
func stripIgnorable(s string) string {
	return strings.Map(func(r rune) rune {
		if Ignorable(r) {
			return -1
		}
		return r
	}, s)
}

// appendPiece appends to out the letters and digits of the prototype of
// r, a character of a prepared text: the skeleton of r without its marks.
// This is the UTS #39 skeleton taken one character at a time, which is the
// same once combining marks are gone.
func appendPiece(out []rune, r rune) []rune {
	repl := confusable.GetReplacement(r)
	if repl == "" {
		if alnum(r) {
			out = append(out, r)
		}
		return out
	}
	if !utf8.ValidString(repl) || !norm.NFD.IsNormalString(repl) {
		repl = norm.NFD.String(repl)
	}
	for _, p := range repl {
		if alnum(p) {
			out = append(out, p)
		}
	}
	return out
}

// piece returns the prototype letters and digits of the single character
// r (see appendPiece), after the preparation [Form] applies to it.
func piece(r rune) string {
	return string(form(string(r)))
}

// alnum reports whether r counts in a [Form]: a letter or a digit.
func alnum(r rune) bool { return unicode.IsLetter(r) || unicode.IsNumber(r) }

// pattern is what a text must read as: for each position, the forms it
// may take. A form may be longer than one character ("m" reads as "rn").
type pattern [][]string

// wordPattern returns the pattern of word in any case: each letter in
// lower or upper case.
func wordPattern(word string) pattern {
	var p pattern
	for _, c := range word {
		alts := variants([]rune{unicode.ToLower(c), unicode.ToUpper(c), unicode.ToTitle(c)})
		if alts != nil {
			p = append(p, alts)
		}
	}
	return p
}

// variants returns the distinct non-empty forms of the characters cs, or
// nil when none has a letter or digit (the position then does not count,
// as [Form] does not count it).
func variants(cs []rune) []string {
	var alts []string
	for _, c := range cs {
		if f := piece(c); f != "" && !contains(alts, f) {
			alts = append(alts, f)
		}
	}
	return alts
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
