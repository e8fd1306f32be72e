package wire

import (
	"strconv"
	"unicode/utf8"
)

// Valid reports whether [CheckJSON] accepts b: one JSON value with
// optional surrounding whitespace, valid UTF-8, no unpaired surrogate
// escape, no number beyond float64, nested at most [MaxDepth] deep. It
// does in one pass, without allocating, what CheckJSON's three passes do;
// those remain to say what is wrong with a body this refuses. A fuzz test
// holds the two to the same answer.
func Valid(b []byte) bool {
	i, ok := validValue(b, skipSpace(b, 0), 0)
	return ok && skipSpace(b, i) == len(b)
}

// validValue checks the value that starts at b[i], itself inside depth
// arrays and objects, and returns the index just after it.
func validValue(b []byte, i, depth int) (int, bool) {
	if i >= len(b) {
		return i, false
	}
	switch b[i] {
	case '{':
		return validContainer(b, i, depth, '}')
	case '[':
		return validContainer(b, i, depth, ']')
	case '"':
		return validString(b, i)
	case 't':
		return validLiteral(b, i, "true")
	case 'f':
		return validLiteral(b, i, "false")
	case 'n':
		return validLiteral(b, i, "null")
	default:
		return validNumber(b, i)
	}
}

// validContainer checks the object or array that opens at b[i] and closes
// with end.
func validContainer(b []byte, i, depth int, end byte) (int, bool) {
	if depth >= MaxDepth {
		return i, false
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == end {
		return i + 1, true
	}
	for {
		var ok bool
		if end == '}' {
			if i >= len(b) || b[i] != '"' {
				return i, false
			}
			if i, ok = validString(b, i); !ok {
				return i, false
			}
			i = skipSpace(b, i)
			if i >= len(b) || b[i] != ':' {
				return i, false
			}
			i = skipSpace(b, i+1)
		}
		if i, ok = validValue(b, i, depth+1); !ok {
			return i, false
		}
		i = skipSpace(b, i)
		switch {
		case i >= len(b):
			return i, false
		case b[i] == end:
			return i + 1, true
		case b[i] != ',':
			return i, false
		}
		i = skipSpace(b, i+1)
	}
}

// validString checks the string whose opening quote is at b[i].
func validString(b []byte, i int) (int, bool) {
	for i++; i < len(b); {
		switch c := b[i]; {
		case c == '"':
			return i + 1, true
		case c == '\\':
			var ok bool
			if i, ok = validEscape(b, i); !ok {
				return i, false
			}
		case c < 0x20:
			return i, false
		case c < utf8.RuneSelf:
			i++
		default:
			r, size := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && size == 1 {
				return i, false
			}
			i += size
		}
	}
	return i, false
}

// validEscape checks the escape that starts at b[i], a backslash, and
// returns the index after it. A \u escape of a high surrogate must be
// followed at once by one of a low surrogate, and the pair counts as one
// escape; any other surrogate escape is refused.
func validEscape(b []byte, i int) (int, bool) {
	if i+1 >= len(b) {
		return i, false
	}
	switch b[i+1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return i + 2, true
	case 'u':
	default:
		return i, false
	}
	r, ok := validHex4(b, i+2)
	if !ok {
		return i, false
	}
	i += 6
	if r < 0xd800 || r >= 0xe000 {
		return i, true
	}
	if r >= 0xdc00 || i+1 >= len(b) || b[i] != '\\' || b[i+1] != 'u' {
		return i, false
	}
	low, ok := validHex4(b, i+2)
	if !ok || low < 0xdc00 || low >= 0xe000 {
		return i, false
	}
	return i + 6, true
}

// validHex4 decodes the four hex digits at b[i:i+4].
func validHex4(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// validLiteral checks that b[i:] starts with word.
func validLiteral(b []byte, i int, word string) (int, bool) {
	if len(b)-i < len(word) || string(b[i:i+len(word)]) != word {
		return i, false
	}
	return i + len(word), true
}

// validNumber checks the number that starts at b[i]: JSON's grammar, and
// for one long enough or with an exponent to reach beyond float64, the
// range checkNumber enforces.
func validNumber(b []byte, i int) (int, bool) {
	start := i
	if b[i] == '-' {
		i++
	}
	switch {
	case i >= len(b):
		return i, false
	case b[i] == '0':
		i++
	case b[i] >= '1' && b[i] <= '9':
		i = skipDigits(b, i+1)
	default:
		return i, false
	}
	if i < len(b) && b[i] == '.' {
		if i+1 >= len(b) || !isDigit(b[i+1]) {
			return i, false
		}
		i = skipDigits(b, i+2)
	}
	exp := false
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		exp = true
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || !isDigit(b[i]) {
			return i, false
		}
		i = skipDigits(b, i+1)
	}
	if exp || i-start >= 16 {
		if _, err := strconv.ParseFloat(string(b[start:i]), 64); err != nil {
			return i, false
		}
	}
	return i, true
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func skipDigits(b []byte, i int) int {
	for i < len(b) && isDigit(b[i]) {
		i++
	}
	return i
}
