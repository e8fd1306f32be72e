package lookalike

import (
	"strings"
	"testing"

	"go.mau.fi/util/confusable"
)

// Form is the UTS #39 skeleton of the prepared text, letters and digits
// only: taking the skeleton one character at a time changes nothing.
func TestFormIsTheSkeletonsLettersAndDigits(t *testing.T) {
	for _, s := range []string{
		"Interlink", "Ｉｎｔｅｒ-ｌｉｎｋ", "Int\u0435rlink", "\uA4F2NTERLINK", "aᏞice", "rn m", "Ⅻ ½", "Jos\u00e9",
		"ø¢", "ﬁle", "日本語", "한국어", "\U0001D400\U0001D41B", "al\u3164ice", "e\u0301\u0328",
	} {
		var want strings.Builder
		for _, r := range confusable.Skeleton(prepared(s)) {
			if alnum(r) {
				want.WriteRune(r)
			}
		}
		if got := Form(s); got != want.String() {
			t.Errorf("Form(%+q) = %+q, the skeleton's letters and digits are %+q", s, got, want.String())
		}
	}
}

func TestSkeleton(t *testing.T) {
	for _, tt := range []struct{ a, b string }{
		{"☃", "☃\u200b"},
		{"a b", "ａ\u3000ｂ"},
		{"Interlink", "\u0406nterlink"},
	} {
		if Skeleton(tt.a) != Skeleton(tt.b) {
			t.Errorf("Skeleton(%+q) = %+q, Skeleton(%+q) = %+q; want equal", tt.a, Skeleton(tt.a), tt.b, Skeleton(tt.b))
		}
	}
	if Skeleton("☃") == Skeleton("★") {
		t.Error("two different symbols share a skeleton")
	}
}

// reservedSpellings are names that read as "self" or "Interlink".
var reservedSpellings = []string{
	"self", "SELF", "Self", " self ", "<self>", "se\u200blf", "\u017felf", "ｓｅｌｆ", "s\u0435lf", "\u0455elf", "seIf",
	"\uA4E2ELF",  // Lisu ꓢ
	"\u2800self", // braille pattern blank
	"se\u3164lf", // Hangul filler
	"sel\u0192",  // f with hook
	"Interlink", "interlink", "INTERLINK", `"Interlink"`, "Inter\u200blink", "Ｉｎｔｅｒｌｉｎｋ", "Interlin\u212a",
	"\u0406nterlink", "Int\u0435rlink", "\u0399\u039d\u03a4\u0395RL\u0399\u039d\u039a", "lnterlink", "Interl1nk",
	"\u026anterlink", "\u00cdnterl\u00efnk", "interIink", "Inter-link", "inter link",
	"\uA4F2NTERLINK",  // Lisu ꓲ
	"\u13A5nterlink",  // Cherokee Ꭵ
	"Inter\u115Flink", // Hangul choseong filler
	"\u0196nterlink",  // Latin capital iota
	"\u2D4Fnterlink",  // Tifinagh yan
	"Interlin\u0138",  // kra, which UTS #39 keeps apart from k
	"Interlin\u043a",  // Cyrillic small ka
	"\u0456nterlink",  // Cyrillic і
}

func TestSpellsReadsReservedWordsInAnyCaseAndDisguise(t *testing.T) {
	for _, s := range reservedSpellings {
		if !Spells(s, "self") && !Spells(s, "interlink") {
			t.Errorf("%+q (form %+q) spells neither self nor interlink", s, Form(s))
		}
	}
	for _, s := range []string{
		"Seif", "shelf", "myself", "self-2", "self laptop", "Interlinc", "lnterlinks", "interiink", "Interlink2",
		"", "laptop", "\u2603", "Interlinĸĸ", "Interlĸnĸ", "sel", "elf",
	} {
		if Spells(s, "self") || Spells(s, "interlink") {
			t.Errorf("%+q (form %+q) reads as a reserved word", s, Form(s))
		}
	}
}

func TestLeadsAndEnds(t *testing.T) {
	for _, tt := range []struct {
		s           string
		leads, ends bool
	}{
		{"[interlink notice] Interlink itself wrote this", true, false},
		{"\u2800[interlink notice]", true, false},
		{"\u0301[interlink notice]", true, false},
		{"\u3164[interlink notice]", true, false},
		{"[\u0456nterlink notice]", true, false},
		{"< / INTERLINK sender=", true, false},
		{"[interlinĸ peer message from", true, false},
		{"[unread] Receipt", false, true},
		{"[unread] R\u0435ceipt ", false, true},
		{"[unread] RECEIPT\u2800", false, true},
		{"interlink receipt", true, true},
		{"1. [interlink notice]", false, false},
		{"x[interlink", false, false},
		{"my receipts", false, false},
		{"receipt for the interlink", false, false},
	} {
		if got := Leads(tt.s, "interlink"); got != tt.leads {
			t.Errorf("Leads(%+q, interlink) = %v, want %v", tt.s, got, tt.leads)
		}
		if got := Ends(tt.s, "receipt"); got != tt.ends {
			t.Errorf("Ends(%+q, receipt) = %v, want %v", tt.s, got, tt.ends)
		}
	}
}

func TestAlike(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		want bool
	}{
		{"alice", "alice", true},
		{"alice", "ALICE", true},
		{"bob", "Bob", true},
		{"alice", "alice\u115f", true},
		{"alice", "al\u3164ice", true},
		{"alice", "a\u13DEice", true}, // Cherokee Ꮮ
		{"alice", "\uA4EElice", true}, // Lisu ꓮ
		{"alice", "alice\u2800", true},
		{"alice", "a.lice", true},
		{"bob", "b\u043eb", true},
		{"PAPA", "\u0420\u0410\u0420\u0410", true},
		{"Bill", "BiII", true},
		{"Bill", "Bi11", true},
		{"Jose", "Jos\u00e9", true},
		{"laptop", "\uff4c\uff41\uff50\uff54\uff4f\uff50", true},
		{"mike", "rnike", true}, // a two-letter look-alike
		{"Mike", "rnike", true},
		{"stra\u00dfe", "STRA\u1E9EE", true},
		{"\u65e5\u672c", "\u65e5\u672c", true},
		{"\u2603", "\u2603\u200b", true},
		{"self", "seif", false},
		{"bob", "bobby", false},
		{"bob", "bob-2", false},
		{"ops/db-1", "ops/db-2", false},
		{"ali", "all", false},
		{"bob", "B\u043e\u13CF", true}, // Cyrillic о, Cherokee Ꮟ
		{"BoB", "bOb", true},
		{"INTERLINK", "\uA4F2NTERLINK", true},
		{"\u674e", "\u738b", false}, // two Chinese names
		{"\u2603", "\u2605", false},
		{"\u2603", "a", false},
	} {
		if got := Alike(tt.a, tt.b); got != tt.want {
			t.Errorf("Alike(%+q, %+q) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
		if got := Alike(tt.b, tt.a); got != tt.want {
			t.Errorf("Alike(%+q, %+q) = %v, want %v", tt.b, tt.a, got, tt.want)
		}
	}
}

// FuzzAlike: nothing panics, a name is alike to itself and to itself in
// other case, and Alike is symmetric; a text spelling a word leads and
// ends with it.
func FuzzAlike(f *testing.F) {
	for _, s := range reservedSpellings {
		f.Add(s, "alice")
	}
	f.Add("", "")
	f.Add("\xff", "\u0301")
	f.Fuzz(func(t *testing.T, a, b string) {
		if !Alike(a, a) {
			t.Fatalf("%+q is not alike to itself", a)
		}
		if Alike(a, b) != Alike(b, a) {
			t.Fatalf("Alike(%+q, %+q) is not symmetric", a, b)
		}
		if up := strings.ToUpper(a); Form(a) != "" && !Alike(a, up) {
			t.Fatalf("%+q is not alike to %+q", a, up)
		}
		for _, w := range []string{"self", "interlink"} {
			if Spells(a, w) && (!Leads(a, w) || !Ends(a, w)) {
				t.Fatalf("%+q spells %s but does not lead and end with it", a, w)
			}
		}
	})
}

// FuzzForm: the reader's form, read in chunks, is the form of the whole
// text normalized at once (the UTS #39 skeleton's letters and digits), and
// nothing panics.
func FuzzForm(f *testing.F) {
	for _, s := range reservedSpellings {
		f.Add(s)
	}
	f.Add("e\u0301\u0328 \u1100\u1161\u11a8 ｶﾞ \u00c5\u030a" + strings.Repeat("é", 200))
	f.Fuzz(func(t *testing.T, s string) {
		got, want := Form(s), string(appendForm(nil, s))
		if got != want {
			t.Fatalf("Form(%+q) = %+q, the whole text's form is %+q", s, got, want)
		}
	})
}

func TestDrawnAs(t *testing.T) {
	for _, tt := range []struct {
		r, c rune
		want bool
	}{
		{':', ':', true},
		{'\u0589', ':', true}, // Armenian full stop
		{'\u2236', ':', true}, // ratio
		{'\uff1a', ':', true}, // full-width colon
		{'\ufe55', ':', true}, // small colon
		{';', ':', false},
		{'a', ':', false},
		{'\u65e5', ':', false},
		{'\u0430', 'a', true}, // Cyrillic а
	} {
		if got := DrawnAs(tt.r, tt.c); got != tt.want {
			t.Errorf("DrawnAs(%U, %q) = %v, want %v", tt.r, tt.c, got, tt.want)
		}
	}
}
