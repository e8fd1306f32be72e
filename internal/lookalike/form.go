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

// DrawnAs reports whether the character r is drawn as the character c:
// it is c, or its compatibility form (NFKC) or its UTS #39 prototype
// ([Skeleton]) is c, as the Armenian full stop "։" and the ratio sign "∶"
// are drawn as ":".
func DrawnAs(r, c rune) bool {
	if r == c {
		return true
	}
	if single(confusable.GetReplacement(r)) == c {
		return true
	}
	var buf [utf8.UTFMax]byte
	b := buf[:utf8.EncodeRune(buf[:], r)]
	if norm.NFKC.IsNormal(b) {
		return false // its prototype was checked above
	}
	return single(Skeleton(string(b))) == c
}

// single returns the one character s holds, or -1.
func single(s string) rune {
	r, n := utf8.DecodeRuneInString(s)
	if n == 0 || n != len(s) {
		return -1
	}
	return r
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
	var b strings.Builder
	r := newReader(s)
	for c, ok := r.next(); ok; c, ok = r.next() {
		b.WriteRune(c)
	}
	return b.String()
}

// chunkLimit bounds how many bytes of text outside ASCII a reader
// normalizes at once.
const chunkLimit = 64

// reader yields the [Form] of a text one character at a time, doing only
// the work the characters asked for need: ASCII is read from a table, and
// text outside ASCII is normalized in chunks of at most [chunkLimit]
// bytes, cut where a character outside ASCII meets an ASCII one or at the
// limit. A cut between a letter and its combining marks changes no letter,
// since the marks are dropped either way.
type reader struct {
	s   string // what is left to read
	buf []rune // read but not yet yielded
}

func newReader(s string) *reader { return &reader{s: s} }

// next returns the next character of the form, or false at the end.
func (r *reader) next() (rune, bool) {
	for len(r.buf) == 0 {
		if r.s == "" {
			return 0, false
		}
		if c := r.s[0]; c < utf8.RuneSelf {
			r.s = r.s[1:]
			r.buf = asciiForm[c]
			continue
		}
		end := 0
		for end < len(r.s) && end < chunkLimit && r.s[end] >= utf8.RuneSelf {
			end++
		}
		for end < len(r.s) && end > 0 && !utf8.RuneStart(r.s[end]) {
			end-- // never cut inside a character
		}
		if end == 0 { // a character longer than the limit cannot be; be safe
			end = 1
		}
		r.buf = appendForm(nil, r.s[:end])
		r.s = r.s[end:]
	}
	c := r.buf[0]
	r.buf = r.buf[1:]
	return c, true
}

// asciiForm holds the form of each ASCII character: "m" reads as "rn", "I"
// and "|" as "l", "0" as "O", most letters and digits as themselves, most
// signs as nothing.
var asciiForm = func() (t [utf8.RuneSelf][]rune) {
	for c := range t {
		t[c] = appendForm(nil, string(rune(c)))
	}
	return t
}()

// appendForm appends the form of s to out, the slow way: NFKC, NFD,
// without ignorable characters and marks, each character's prototype,
// letters and digits only.
func appendForm(out []rune, s string) []rune {
	for _, c := range prepared(s) {
		out = appendPiece(out, c)
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
	for _, p := range norm.NFD.String(repl) {
		if alnum(p) {
			out = append(out, p)
		}
	}
	return out
}

// alnum reports whether r counts in a [Form]: a letter or a digit.
func alnum(r rune) bool { return unicode.IsLetter(r) || unicode.IsNumber(r) }

// pattern is what a text must read as: for each position, the forms it
// may take. A form may be longer than one character ("m" reads as "rn").
type pattern [][][]rune

// wordPattern returns the pattern of word in any case: each letter in
// lower or upper case.
func wordPattern(word string) pattern {
	var p pattern
	for _, c := range word {
		var alts [][]rune
		for _, v := range []rune{unicode.ToLower(c), unicode.ToUpper(c), unicode.ToTitle(c)} {
			f := []rune(Form(string(v)))
			if len(f) > 0 && !containsForm(alts, f) {
				alts = append(alts, f)
			}
		}
		if alts != nil {
			p = append(p, alts)
		}
	}
	return p
}

func containsForm(alts [][]rune, f []rune) bool {
	for _, a := range alts {
		if string(a) == string(f) {
			return true
		}
	}
	return false
}
