package render

import (
	"strings"
	"testing"
)

// benchBodies are bodies of MaxText bytes: prose, and the shapes that make
// the look-alike rule work hardest (a "<" every other byte, a colon in
// every line's head, CJK text whose every character is looked up).
var benchBodies = map[string]string{
	"prose":  strings.Repeat("The parser now accepts nested lists; see receipt: 42 <b>bold</b>.\n", MaxText/68),
	"angles": strings.Repeat("<i", MaxText/2),
	"colons": strings.Repeat(strings.Repeat("receipt:", 32)+"\n", MaxText/257),
	"cjk":    strings.Repeat("日本語のテキストです。", MaxText/33),
}

// BenchmarkBody measures Body on each bench body; BenchmarkBodyFloor is a
// single pass over the same bytes (strings.ToValidUTF8 and a split into
// lines), the least any rendering costs.
func BenchmarkBody(b *testing.B) {
	for name, body := range benchBodies {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				Body(body)
			}
		})
	}
}

func BenchmarkBodyFloor(b *testing.B) {
	for name, body := range benchBodies {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				_ = strings.Split(strings.ToValidUTF8(body, "\uFFFD"), "\n")
			}
		})
	}
}
