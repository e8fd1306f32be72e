package lookalike

import (
	"strings"
	"testing"
	"unicode"
)

// publishedIgnorable is Default_Ignorable_Code_Point as
// DerivedCoreProperties.txt lists it for Unicode 15.0, the version of the
// standard library's tables: ranges of code points, first and last.
var publishedIgnorable = [][2]rune{
	{0x00AD, 0x00AD},   // SOFT HYPHEN
	{0x034F, 0x034F},   // COMBINING GRAPHEME JOINER
	{0x061C, 0x061C},   // ARABIC LETTER MARK
	{0x115F, 0x1160},   // HANGUL CHOSEONG FILLER..HANGUL JUNGSEONG FILLER
	{0x17B4, 0x17B5},   // KHMER VOWEL INHERENT AQ..KHMER VOWEL INHERENT AA
	{0x180B, 0x180F},   // MONGOLIAN FREE VARIATION SELECTORS, VOWEL SEPARATOR
	{0x200B, 0x200F},   // ZERO WIDTH SPACE..RIGHT-TO-LEFT MARK
	{0x202A, 0x202E},   // LEFT-TO-RIGHT EMBEDDING..RIGHT-TO-LEFT OVERRIDE
	{0x2060, 0x206F},   // WORD JOINER..NOMINAL DIGIT SHAPES
	{0x3164, 0x3164},   // HANGUL FILLER
	{0xFE00, 0xFE0F},   // VARIATION SELECTOR-1..16
	{0xFEFF, 0xFEFF},   // ZERO WIDTH NO-BREAK SPACE
	{0xFFA0, 0xFFA0},   // HALFWIDTH HANGUL FILLER
	{0xFFF0, 0xFFF8},   // unassigned, reserved as ignorable
	{0x1BCA0, 0x1BCA3}, // SHORTHAND FORMAT LETTER OVERLAP..STEP
	{0x1D173, 0x1D17A}, // MUSICAL SYMBOL BEGIN BEAM..END PHRASE
	{0xE0000, 0xE0FFF}, // tags, variation selectors 17..256, reserved
}

// Ignorable holds for exactly the published code points, over the whole
// code space: the derivation from the standard library's tables is the
// property's definition.
func TestIgnorableIsTheDefaultIgnorableProperty(t *testing.T) {
	if unicode.Version != "15.0.0" {
		t.Skipf("the published list here is for Unicode 15.0.0; Go has %s", unicode.Version)
	}
	published := func(r rune) bool {
		for _, rg := range publishedIgnorable {
			if rg[0] <= r && r <= rg[1] {
				return true
			}
		}
		return false
	}
	wrong := 0
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if Ignorable(r) != published(r) {
			t.Errorf("Ignorable(%U) = %v, the property says %v", r, Ignorable(r), published(r))
			if wrong++; wrong > 10 {
				t.Fatal("too many differences")
			}
		}
	}
}

func TestVisible(t *testing.T) {
	for _, tt := range []struct{ name, in, want string }{
		{"plain", "report done", "report done"},
		{"zero-width space", "ad\u200bmin", "admin"},
		{"hangul fillers", "al\u3164ice\u115f\u1160\uffa0", "alice"},
		{"tag characters", "ok\U000E0001\U000E0069\U000E0067\U000E006E\U000E006F\U000E0072\U000E0065\U000E007F", "ok"},
		{"bidi override", "a\u202eb", "ab"},
		{"combining grapheme joiner", "\u034f[interlink", "[interlink"},
		{"soft hyphen", "ad\u00admin", "admin"},
		{"emoji presentation after a symbol", "\u2764\ufe0f", "\u2764\ufe0f"},
		{"keycap", "1\ufe0f\u20e3", "1\ufe0f\u20e3"},
		{"presentation selector after a letter", "a\ufe0fb", "ab"},
		{"second selector", "\u2764\ufe0f\ufe0f", "\u2764\ufe0f"},
		{"other variation selectors", "\U0001F600\ufe01\U000E0100\U000E01EF", "\U0001F600"},
		{"family", "\U0001F469\u200d\U0001F4BB", "\U0001F469\u200d\U0001F4BB"},
		{"skin tone then joiner", "\U0001F469\U0001F3FD\u200d\U0001F4BB", "\U0001F469\U0001F3FD\u200d\U0001F4BB"},
		{"rainbow flag", "\U0001F3F3\ufe0f\u200d\U0001F308", "\U0001F3F3\ufe0f\u200d\U0001F308"},
		{"subdivision flag loses its tags", "\U0001F3F4\U000E0067\U000E0062\U000E0073\U000E0063\U000E0074\U000E007F", "\U0001F3F4"},
		{"joiner between letters", "a\u200db", "ab"},
		{"joiner at the end", "\u2603\u200d", "\u2603"},
		{"two joiners", "\u2603\u200d\u200d\u2603", "\u2603\u200d\u2603"},
		{"joiner before a filler", "\u2603\u200d\u3164\u2603", "\u2603\u2603"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := Visible(tt.in)
			if got != tt.want {
				t.Errorf("Visible(%+q) = %+q, want %+q", tt.in, got, tt.want)
			}
			if again := Visible(got); again != got {
				t.Errorf("Visible is not idempotent: %+q -> %+q", got, again)
			}
		})
	}
}

// FuzzVisible: Visible never panics, is idempotent, keeps every character
// that is not ignorable in order, and keeps only the emoji joiners it
// allows.
func FuzzVisible(f *testing.F) {
	for _, s := range []string{"", "a\u200bb", "\u2764\ufe0f\u200d\U0001F525", "\U0001F3F4\U000E0067\U000E007F", "1\ufe0f\u20e3", "\ufe0f\u200d"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		s = strings.ToValidUTF8(s, "\ufffd")
		got := Visible(s)
		if Visible(got) != got {
			t.Fatalf("not idempotent: %+q -> %+q -> %+q", s, got, Visible(got))
		}
		if want := stripIgnorable(s); stripIgnorable(got) != want {
			t.Fatalf("Visible(%+q) = %+q changed visible characters", s, got)
		}
		for _, r := range got {
			if Ignorable(r) && r != zwj && r != vs15 && r != vs16 {
				t.Fatalf("Visible(%+q) = %+q keeps %U", s, got, r)
			}
		}
	})
}
