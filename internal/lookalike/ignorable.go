package lookalike

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Ignorable reports whether r is a default-ignorable code point: a
// character that a renderer without special support draws as nothing.
//
// The Unicode Character Database derives the property
// Default_Ignorable_Code_Point (DerivedCoreProperties.txt) as
//
//	Other_Default_Ignorable_Code_Point
//	+ Cf (format characters)
//	+ Variation_Selector
//	- White_Space
//	- U+FFF9..U+FFFB (interlinear annotation format characters)
//	- U+13430..U+1343F (Egyptian hieroglyph format characters)
//	- Prepended_Concatenation_Mark (format characters that should be visible)
//
// and Ignorable computes exactly that from the standard library's tables,
// so it follows the Unicode version Go ships. The set holds the zero-width
// characters (U+200B..U+200D, U+2060), the bidirectional controls, the
// byte order mark, the soft hyphen, the combining grapheme joiner, the
// Hangul fillers (U+115F, U+1160, U+3164, U+FFA0, letters drawn as
// nothing), the variation selectors and the tag characters
// (U+E0000..U+E0FFF).
func Ignorable(r rune) bool {
	switch {
	case r < 0xAD:
		return false // fast path: nothing below the soft hyphen
	case !unicode.In(r, unicode.Other_Default_Ignorable_Code_Point, unicode.Cf, unicode.Variation_Selector):
		return false
	case unicode.In(r, unicode.White_Space, unicode.Prepended_Concatenation_Mark):
		return false
	case 0xFFF9 <= r && r <= 0xFFFB, 0x13430 <= r && r <= 0x1343F:
		return false
	}
	return true
}

// The ignorable characters [Visible] keeps in emoji.
const (
	zwj  = '\u200D' // ZERO WIDTH JOINER
	vs15 = '\uFE0E' // VARIATION SELECTOR-15, text presentation
	vs16 = '\uFE0F' // VARIATION SELECTOR-16, emoji presentation
)

// Visible returns s without its [Ignorable] characters, except two kinds
// that emoji need and that cannot hide text:
//
//   - one presentation selector (U+FE0E or U+FE0F) right after a symbol or
//     after a digit, "#" or "*" (the bases of keycap emoji), as in "❤️";
//   - a zero width joiner between two symbols, or between such a selector
//     and a symbol, as in the family and flag sequences "👩‍💻", "🏳️‍🌈".
//
// Everything else goes: tag characters (so the subdivision flags lose their
// tags and show as a black flag), the other variation selectors (which can
// carry bytes after an emoji), zero-width characters between letters,
// fillers, bidirectional controls. What is removed was never drawn, so a
// reader loses nothing; what is kept carries at most a bit per emoji.
//
// Visible is idempotent, and s is returned as it is when it has nothing to
// remove.
func Visible(s string) string {
	if strings.IndexFunc(s, Ignorable) < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	prev := rune(-1) // the last character written
	for i, r := range s {
		if Ignorable(r) {
			next, size := utf8.DecodeRuneInString(s[i+utf8.RuneLen(r):])
			keep := false
			switch r {
			case vs15, vs16:
				keep = symbol(prev) || keycapBase(prev)
			case zwj:
				keep = (symbol(prev) || prev == vs15 || prev == vs16) && size > 0 && symbol(next)
			}
			if !keep {
				continue
			}
		}
		b.WriteRune(r)
		prev = r
	}
	return b.String()
}

// symbol reports whether r is a symbol (Unicode category S), as most emoji
// are, including the skin tone modifiers.
func symbol(r rune) bool { return r >= 0 && unicode.IsSymbol(r) }

// keycapBase reports whether r starts a keycap emoji such as "1️⃣".
func keycapBase(r rune) bool { return '0' <= r && r <= '9' || r == '#' || r == '*' }
