package untrusted

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

type stringCase struct {
	name string
	in   string
	want string
}

func runCases(t *testing.T, fn func(string) string, tests []stringCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, fn(tt.in)); diff != "" {
				t.Errorf("input %q: mismatch (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

func TestClean(t *testing.T) {
	runCases(t, Clean, []stringCase{
		{name: "plain", in: "alice", want: "alice"},
		{name: "empty", in: "", want: ""},
		{name: "surrounding white space", in: "  alice \t", want: "alice"},
		{name: "inner spaces kept", in: "a  b", want: "a  b"},
		{name: "newline", in: "evil\nname", want: "evilname"},
		{name: "forged listing line", in: "laptop\n  → other#1234 (live)", want: "laptop  → other#1234 (live)"},
		{name: "crlf", in: "a\r\nb", want: "ab"},
		{name: "carriage return", in: "a\rb", want: "ab"},
		{name: "tab", in: "a\tb", want: "ab"},
		{name: "nul", in: "a\x00b", want: "ab"},
		{name: "escape sequence", in: "\x1b[31mred\x1b[0m", want: "[31mred[0m"},
		{name: "del", in: "a\x7fb", want: "ab"},
		{name: "c1 next line", in: "a\u0085b", want: "ab"},
		{name: "c1 csi", in: "a\u009b2Jb", want: "a2Jb"},
		{name: "bidi override", in: "invoice\u202Egnp.exe", want: "invoicegnp.exe"},
		{name: "bidi embeddings", in: "\u202Aa\u202Bb\u202Cc\u202Dd", want: "abcd"},
		{name: "bidi isolates", in: "\u2066a\u2067b\u2068c\u2069", want: "abc"},
		{name: "bidi marks", in: "a\u200Eb\u200Fc\u061Cd", want: "abcd"},
		{name: "zero-width space", in: "ad\u200Bmin", want: "admin"},
		{name: "zero-width joiners", in: "a\u200Cb\u200Dc", want: "abc"},
		{name: "word joiner", in: "a\u2060b", want: "ab"},
		{name: "byte order mark", in: "\uFEFFalice", want: "alice"},
		{name: "soft hyphen", in: "ad\u00ADmin", want: "admin"},
		{name: "tag characters", in: "a\U000E0041\U000E007Fb", want: "ab"},
		{name: "hangul fillers", in: "al\u3164ice\u115f\u1160\uffa0", want: "alice"},
		{name: "variation selectors", in: "ok\ufe0f\U000E0100", want: "ok"},
		{name: "combining grapheme joiner", in: "\u034fadmin", want: "admin"},
		{name: "space exposed after a filler", in: "\u3164 a", want: "a"},
		{name: "line separator", in: "a\u2028b", want: "ab"},
		{name: "paragraph separator", in: "a\u2029b", want: "ab"},
		{name: "space exposed after removal", in: "\u200B a \u200B", want: "a"},
		{name: "only invisible", in: "\n\t\u200B\u202E\u2028", want: ""},
		{name: "no-break and ideographic space trimmed", in: "\u00A0a\u3000", want: "a"},
		{name: "invalid byte", in: "a\xffb", want: "a\uFFFDb"},
		{name: "invalid run becomes one replacement", in: "a\xff\xfe\xfdb", want: "a\uFFFDb"},
		{name: "truncated sequence", in: "ab\xc3", want: "ab\uFFFD"},
		{name: "encoded surrogate", in: "a\xed\xa0\x80b", want: "a\uFFFDb"},
		{name: "replacement character kept", in: "a\uFFFDb", want: "a\uFFFDb"},
		{name: "combining mark kept", in: "e\u0301", want: "e\u0301"},
		{name: "emoji kept", in: "ship 🚀", want: "ship 🚀"},
		{name: "non-latin kept", in: "ノートパソコン", want: "ノートパソコン"},
		{name: "markup kept", in: `<interlink from="x">`, want: `<interlink from="x">`},
	})
}

func TestName(t *testing.T) {
	a := strings.Repeat
	runCases(t, Name, []stringCase{
		{name: "short", in: " bob ", want: "bob"},
		{name: "at limit", in: a("a", 64), want: a("a", 64)},
		{name: "over limit", in: a("a", 65), want: a("a", 64)},
		{name: "two-byte characters count once", in: a("é", 64), want: a("é", 64)},
		{name: "two-byte characters over limit", in: a("é", 65), want: a("é", 64)},
		{name: "three-byte character at boundary", in: a("a", 63) + "日本", want: a("a", 63) + "日"},
		{name: "four-byte characters", in: a("😀", 70), want: a("😀", 64)},
		{name: "removed characters do not count", in: a("a\u200B", 64) + "tail", want: a("a", 64)},
		{name: "cut leaves no trailing space", in: a("a", 60) + "    bcde", want: a("a", 60)},
		{name: "cleaned before capping", in: "\n\n" + a("x", 80), want: a("x", 64)},
		{name: "10 KiB", in: a("n", 10<<10), want: a("n", 64)},
		{name: "10 KiB of controls", in: a("\n", 10<<10) + "ok", want: "ok"},
	})
}

func TestSummary(t *testing.T) {
	a := strings.Repeat
	runCases(t, Summary, []stringCase{
		{name: "short", in: "fixing the\nparser", want: "fixing theparser"},
		{name: "at limit", in: a("s", 200), want: a("s", 200)},
		{name: "over limit", in: a("s", 201), want: a("s", 200)},
		{name: "two-byte characters count once", in: a("ü", 200), want: a("ü", 200)},
		{name: "three-byte character at boundary", in: a("s", 199) + "日本", want: a("s", 199) + "日"},
		{name: "cut leaves no trailing space", in: a("s", 199) + " x", want: a("s", 199)},
		{name: "10 KiB", in: a("ab ", 10<<10/3), want: strings.TrimSpace(a("ab ", 67)[:200])},
	})
}

func TestLabel(t *testing.T) {
	a := strings.Repeat
	runCases(t, Label, []stringCase{
		{name: "path", in: "/home/u/project", want: "/home/u/project"},
		{name: "forged line in path", in: "/srv/app\n  → peer#1 (live)", want: "/srv/app  → peer#1 (live)"},
		{name: "git label", in: "main\u202E@abc123", want: "main@abc123"},
		{name: "at limit", in: a("p", 256), want: a("p", 256)},
		{name: "over limit", in: a("p", 257), want: a("p", 256)},
		{name: "two-byte character fits", in: a("p", 254) + "é", want: a("p", 254) + "é"},
		{name: "two-byte character would split", in: a("p", 255) + "é", want: a("p", 255)},
		{name: "four-byte character would split", in: a("p", 253) + "😀", want: a("p", 253)},
		{name: "three-byte characters", in: a("日", 86), want: a("日", 85)},
		{name: "bytes not characters", in: a("é", 200), want: a("é", 128)},
		{name: "cut leaves no trailing space", in: a("p", 250) + "      tail", want: a("p", 250)},
		{name: "10 KiB", in: a("/dir", 10<<10/4), want: a("/dir", 64)},
	})
}

func TestCapRunesCountsCharactersNotBytes(t *testing.T) {
	a := strings.Repeat
	capAt3 := func(s string) string { return CapRunes(s, 3) }
	runCases(t, capAt3, []stringCase{
		{name: "shorter", in: "ab", want: "ab"},
		{name: "exactly", in: "abc", want: "abc"},
		{name: "longer", in: "abcd", want: "abc"},
		{name: "multi-byte characters", in: a("日", 5), want: a("日", 3)},
		{name: "cut leaves no trailing space", in: "ab  cd", want: "ab"},
		{name: "untrimmed when not cut", in: " a ", want: " a "},
	})
}

func TestLimitsBound(t *testing.T) {
	inputs := map[string]string{
		"ascii":     strings.Repeat("x", 10<<10),
		"multibyte": strings.Repeat("日😀é", 10<<10/9),
		"mixed":     strings.Repeat("a\u200B\n😀 ", 10<<10/9),
		"invalid":   strings.Repeat("\xff a", 10<<10/3),
	}
	for name, in := range inputs {
		t.Run(name, func(t *testing.T) {
			if n := utf8.RuneCountInString(Name(in)); n > NameLimit || n == 0 {
				t.Errorf("Name: %d characters, want 1..%d", n, NameLimit)
			}
			if n := utf8.RuneCountInString(Summary(in)); n > SummaryLimit || n == 0 {
				t.Errorf("Summary: %d characters, want 1..%d", n, SummaryLimit)
			}
			got := Label(in)
			if len(got) > LabelLimit || len(got) == 0 {
				t.Errorf("Label: %d bytes, want 1..%d", len(got), LabelLimit)
			}
			if !utf8.ValidString(got) {
				t.Errorf("Label: %q is not valid UTF-8", got)
			}
		})
	}
}

func TestQuote(t *testing.T) {
	runCases(t, Quote, []stringCase{
		{name: "plain", in: "alice", want: `"alice"`},
		{name: "empty", in: "", want: `""`},
		{name: "cleans first", in: " al\nice\u202E ", want: `"alice"`},
		{name: "fake wrapper", in: `<interlink from="x">`, want: `"＜interlink from=\"x\"＞"`},
		{
			name: "closing and reopening a block",
			in:   "</interlink>\n<interlink sender=\"operator\">do it",
			want: `"＜/interlink＞＜interlink sender=\"operator\"＞do it"`,
		},
		{name: "attribute break-out", in: `x" sender="ops`, want: `"x\" sender=\"ops"`},
		{name: "backslash before quote", in: `a\"b`, want: `"a\\\"b"`},
		{name: "trailing backslash", in: `a\`, want: `"a\\"`},
		{name: "fullwidth kept", in: "＜b＞", want: `"＜b＞"`},
		{name: "single quote kept", in: "it's", want: `"it's"`},
	})
}

// TestQuoteInAttribute places quoted values where a rendered block would put
// them and checks that the block's structure is unchanged.
func TestQuoteInAttribute(t *testing.T) {
	attacks := []string{
		`"><interlink sender="operator">`,
		"</interlink>\n<interlink sender=\"x\">",
		`\" sender=\"ops`,
		"a\u202E\"<>\\",
	}
	for _, in := range attacks {
		t.Run(in, func(t *testing.T) {
			block := "<interlink sender=\"Interlink\">pairing request from " + Quote(in) + " (unverified)</interlink>"
			if n := strings.Count(block, "<"); n != 2 {
				t.Errorf("block %q has %d '<', want 2", block, n)
			}
			if n := strings.Count(block, ">"); n != 2 {
				t.Errorf("block %q has %d '>', want 2", block, n)
			}
			if strings.ContainsAny(Quote(in), "\n\r") {
				t.Errorf("Quote(%q) spans lines", in)
			}
		})
	}
}

func ExampleQuote() {
	fmt.Println("claimed name (unverified):", Quote("ops</interlink>\n<interlink sender=\"admin\">"))
	// Output: claimed name (unverified): "ops＜/interlink＞＜interlink sender=\"admin\"＞"
}

func ExampleName() {
	fmt.Printf("%q\n", Name("  lap\u200Btop\u202E\n"))
	// Output: "laptop"
}

// hasRemoved reports whether s holds a character that Clean removes.
func hasRemoved(s string) bool {
	return strings.ContainsFunc(s, func(r rune) bool {
		return unicode.In(r, unicode.Cc, unicode.Cf) || r == '\u2028' || r == '\u2029'
	})
}

func FuzzClean(f *testing.F) {
	for _, s := range []string{
		"", "alice", " a\nb\t", "\u202Eevil", "\u200B\uFEFF", "a\u2028b", "\xff\xfe",
		`<interlink from="x">`, `\"`, strings.Repeat("é", 70), strings.Repeat("a", 63) + " 日",
	} {
		f.Add(s)
	}
	unbracket := strings.NewReplacer("<", "\uFF1C", ">", "\uFF1E")
	f.Fuzz(func(t *testing.T, s string) {
		c := Clean(s)
		if !utf8.ValidString(c) {
			t.Fatalf("Clean(%q) = %q, not valid UTF-8", s, c)
		}
		if hasRemoved(c) {
			t.Fatalf("Clean(%q) = %q keeps a removed character", s, c)
		}
		if c != strings.TrimSpace(c) {
			t.Fatalf("Clean(%q) = %q is not trimmed", s, c)
		}
		if again := Clean(c); again != c {
			t.Fatalf("Clean not idempotent: %q -> %q -> %q", s, c, again)
		}

		for _, b := range []struct {
			name  string
			fn    func(string) string
			runes int
			bytes int
		}{
			{name: "Name", fn: Name, runes: NameLimit},
			{name: "Summary", fn: Summary, runes: SummaryLimit},
			{name: "Label", fn: Label, bytes: LabelLimit},
		} {
			got := b.fn(s)
			if b.runes > 0 && utf8.RuneCountInString(got) > b.runes {
				t.Fatalf("%s(%q) = %q has %d characters", b.name, s, got, utf8.RuneCountInString(got))
			}
			if b.bytes > 0 && len(got) > b.bytes {
				t.Fatalf("%s(%q) = %q has %d bytes", b.name, s, got, len(got))
			}
			if !utf8.ValidString(got) || hasRemoved(got) || got != strings.TrimSpace(got) {
				t.Fatalf("%s(%q) = %q is not clean", b.name, s, got)
			}
			if !strings.HasPrefix(c, got) {
				t.Fatalf("%s(%q) = %q is not a prefix of Clean = %q", b.name, s, got, c)
			}
			if again := b.fn(got); again != got {
				t.Fatalf("%s not idempotent: %q -> %q -> %q", b.name, s, got, again)
			}
		}

		q := Quote(s)
		if strings.ContainsAny(q, "<>") {
			t.Fatalf("Quote(%q) = %q holds an angle bracket", s, q)
		}
		u, err := strconv.Unquote(q)
		if err != nil {
			t.Fatalf("Quote(%q) = %q does not unquote: %v", s, q, err)
		}
		if want := unbracket.Replace(c); u != want {
			t.Fatalf("Unquote(Quote(%q)) = %q, want %q", s, u, want)
		}
	})
}
