package lookalike

import (
	"slices"
	"strings"
	"sync"
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
	return match(s, patternOf(word), true, true)
}

// Leads reports whether s starts, once everything but letters and digits
// is set aside, with a reading of word as [Spells] allows: "[interlink",
// "\u2800[Ꭵnterlink" and "< / INTERLINK" all lead with "interlink". It
// reads only as much of s as it needs.
func Leads(s, word string) bool {
	return match(s, patternOf(word), true, false)
}

// Ends reports whether s ends, once everything but letters and digits is
// set aside, with a reading of word as [Spells] allows: "[unread] Rеceipt"
// ends with "receipt".
func Ends(s, word string) bool {
	return match(s, patternOf(word), false, true)
}

// Alike reports whether the names a and b read alike: some reading of a
// equals some reading of b ([Readings]: the [Form] of the name as written
// and of the name in lower and in upper case, and that form itself in
// lower and in upper case). So "alice", "ALICE", "al\u3164ice",
// "a\u13DEice" (a Cherokee Ꮮ), "\uA4EElice" (a Lisu ꓮ), "alice\u2800" and
// "a.lice" are all alike, "Bill" and "BiII" (capital I for small L) are
// alike, "bob" and "B\u043e\u13CF" (a Cyrillic о, a Cherokee Ꮟ) are alike,
// and "bob-2" and "bob", "seif" and "self" are not. Readings, rather than
// each letter in either case, keep a small i apart from a small l: "ali"
// and "all" differ. Names without any letter or digit are alike when their
// [Skeleton] is the same.
func Alike(a, b string) bool {
	ra, rb := Readings(a), Readings(b)
	for _, x := range ra {
		for _, y := range rb {
			if x == y {
				return true
			}
		}
	}
	return false
}

// Readings returns the ways a reader may take name in, case aside: the
// [Form] of name as written, in lower case and in upper case, and that
// form in lower and in upper case (so a letter of another script that is
// drawn like a capital B counts as a b too), or the skeleton alone when
// name has no letter or digit. Two names are [Alike] exactly when their
// readings share one, so a caller comparing many names can index them by
// reading.
func Readings(name string) []string {
	f := Form(name)
	if f == "" {
		return []string{Skeleton(name)}
	}
	rs := []string{f}
	for _, r := range []string{Form(strings.ToLower(name)), Form(strings.ToUpper(name)), strings.ToLower(f), strings.ToUpper(f)} {
		if !slices.Contains(rs, r) {
			rs = append(rs, r)
		}
	}
	return rs
}

// patterns caches the patterns of the few words the callers ask for.
var patterns sync.Map // string -> pattern

func patternOf(word string) pattern {
	if p, ok := patterns.Load(word); ok {
		return p.(pattern)
	}
	p := wordPattern(word)
	patterns.Store(word, p)
	return p
}

// ready is the set of pattern positions that are read up to, each without
// or with the wildcard spent: bit 2k for position k without, 2k+1 with.
type ready uint64

// match reports whether the form of s reads as p: from the start of s when
// anchored, else from any position; to the end of s when whole, else to any
// position. One position of p may be read from one character of the form
// outside ASCII, whatever it is (the wildcard).
//
// It runs the pattern as an automaton over the form's characters, so it
// stops as soon as the answer is known. p has at most 31 positions.
func match(s string, p pattern, anchored, whole bool) bool {
	m := len(p)
	if m == 0 || m > 31 {
		return false
	}
	done := ready(1)<<(2*m) | ready(1)<<(2*m+1)
	// A thread is partway through a form longer than one character.
	type thread struct {
		k, a, j int // reading p[k][a], next at offset j
		wild    bool
	}
	var threads, nextThreads []thread
	at := ready(1) // position 0, no wildcard
	r := newReader(s)
	for {
		if !whole && at&done != 0 {
			return true
		}
		c, ok := r.next()
		if !ok {
			return at&done != 0
		}
		var next ready
		advance := func(k int, wild bool) {
			bit := ready(1) << (2 * k)
			if wild {
				bit <<= 1
			}
			next |= bit
		}
		nextThreads = nextThreads[:0]
		for _, t := range threads {
			if f := p[t.k][t.a]; f[t.j] == c {
				if t.j+1 == len(f) {
					advance(t.k+1, t.wild)
				} else {
					nextThreads = append(nextThreads, thread{t.k, t.a, t.j + 1, t.wild})
				}
			}
		}
		for k := 0; k < m; k++ {
			for w := 0; w < 2; w++ {
				if at&(ready(1)<<(2*k+w)) == 0 {
					continue
				}
				for a, f := range p[k] {
					if f[0] != c {
						continue
					}
					if len(f) == 1 {
						advance(k+1, w == 1)
					} else {
						nextThreads = append(nextThreads, thread{k, a, 1, w == 1})
					}
				}
				if w == 0 && c >= utf8.RuneSelf {
					advance(k+1, true)
				}
			}
		}
		if !anchored {
			next |= 1
		}
		if next == 0 && len(nextThreads) == 0 {
			return false // nothing can match from here on
		}
		at = next
		threads, nextThreads = nextThreads, threads
	}
}
