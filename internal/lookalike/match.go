package lookalike

import (
	"strings"
	"unicode/utf8"
)

// Spells reports whether s reads as word, an ASCII word such as "self",
// in any case: the [Form] of s equals the form of word with each letter in
// lower or upper case, one letter of word possibly written with any letter
// or digit outside ASCII. Surrounding white space, punctuation, symbols and
// invisible characters do not count, so "<self>", " SELF", "s\u0435lf"
// (a Cyrillic е), "Inter\u115Flink" and "Interlinĸ" all spell a reserved
// word; "Seif" and "self-2" do not.
func Spells(s, word string) bool {
	return match(form(s), wordPattern(word), true, true, true)
}

// Leads reports whether s starts, once everything but letters and digits
// is set aside, with a reading of word as [Spells] allows: "[interlink",
// "\u2800[Ꭵnterlink" and "< / INTERLINK" all lead with "interlink".
func Leads(s, word string) bool {
	return match(form(s), wordPattern(word), true, true, false)
}

// Ends reports whether s ends, once everything but letters and digits is
// set aside, with a reading of word as [Spells] allows: "[unread] Rеceipt"
// ends with "receipt".
func Ends(s, word string) bool {
	return match(form(s), wordPattern(word), true, false, true)
}

// Alike reports whether the names a and b read alike: some reading of a
// has the same [Form] as some reading of b, where a name's readings are
// the name as written, in lower case and in upper case. So "alice",
// "ALICE", "al\u3164ice", "a\u13DEice" (a Cherokee Ꮮ), "\uA4EElice" (a
// Lisu ꓮ), "alice\u2800" and "a.lice" are all alike, "Bill" and "BiII"
// (capital I for small L) are alike, and "bob-2" and "bob", "seif" and
// "self" are not. Readings, rather than each letter in either case, keep a
// small i apart from a small l: "ali" and "all" differ. Names without any
// letter or digit are alike when their [Skeleton] is the same.
func Alike(a, b string) bool {
	ra, rb := readings(a), readings(b)
	for _, x := range ra {
		for _, y := range rb {
			if x == y {
				return true
			}
		}
	}
	return false
}

// readings returns the forms of name as written, in lower case and in
// upper case, or its skeleton alone when it has no letter or digit.
func readings(name string) []string {
	f := Form(name)
	if f == "" {
		return []string{Skeleton(name)}
	}
	return []string{f, Form(strings.ToLower(name)), Form(strings.ToUpper(name))}
}

// match reports whether the runes in read as p: from the start of in when
// start is set (else from any position), to its end when end is set (else
// up to any position). When wild is set, one position of p may be read
// from one character of in outside ASCII, whatever it is.
func match(in []rune, p pattern, wild, start, end bool) bool {
	if len(p) == 0 {
		return false
	}
	// at[i][k][w] reports that the first k positions of p have been read
	// from in, ending before in[i], without (w == 0) or with (w == 1) the
	// wildcard. The input is short (a name, or a line's head), so the
	// table is small.
	type state [2]bool
	n, m := len(in), len(p)
	at := make([][]state, n+1)
	for i := range at {
		at[i] = make([]state, m+1)
	}
	for i := 0; i <= n; i++ {
		at[i][0][0] = !start || i == 0
	}
	for i := 0; i <= n; i++ {
		for k := 0; k < m; k++ {
			for w := 0; w < 2; w++ {
				if !at[i][k][w] {
					continue
				}
				for _, alt := range p[k] {
					if j, ok := readAt(in, i, alt); ok {
						at[j][k+1][w] = true
					}
				}
				if wild && w == 0 && i < n && in[i] >= utf8.RuneSelf {
					at[i+1][k+1][1] = true
				}
			}
		}
		if !end && (at[i][m][0] || at[i][m][1]) {
			return true
		}
	}
	return at[n][m][0] || at[n][m][1]
}

// readAt reports whether in holds alt at position i, and the position
// after it.
func readAt(in []rune, i int, alt string) (int, bool) {
	for _, r := range alt {
		if i >= len(in) || in[i] != r {
			return 0, false
		}
		i++
	}
	return i, true
}
