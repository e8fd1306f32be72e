package wire

import (
	"strings"
	"testing"
)

// validCases are bodies on both sides of each rule CheckJSON enforces.
var validCases = []struct {
	body string
	ok   bool
}{
	{`{"to":"K#s","payload":{"text":"hi","n":[1,-2.5e3,0,true,false,null]}}`, true},
	{" \t\r\n[ ] \n", true},
	{`{}`, true},
	{`"just a string"`, true},
	{`0`, true},
	{`-0.0E+0`, true},
	{`{"me":"K#s","ack":"K#s\u000000000000000000000001"}`, true},
	{`"\"\\\/\b\f\n\r\t"`, true},
	{`"\ud83d\ude00 and é and ☃ and 😀 and \uFFFD"`, true},
	{`1234567890123456789012345678901234567890`, true},
	{`1e308`, true},
	{`1e-400`, true},
	{"\"\x7f\"", true},

	{``, false},
	{` `, false},
	{`{`, false},
	{`{"a"}`, false},
	{`{"a":}`, false},
	{`{"a":1,}`, false},
	{`[1,]`, false},
	{`[1 2]`, false},
	{`{1:2}`, false},
	{`{"a":1}{}`, false},
	{`{"a":1} x`, false},
	{`tru`, false},
	{`truex`, false},
	{`nul`, false},
	{`01`, false},
	{`-`, false},
	{`1.`, false},
	{`.5`, false},
	{`1e`, false},
	{`1e+`, false},
	{`+1`, false},
	{`1e309`, false},
	{`-1e309`, false},
	{`1` + strings.Repeat("0", 400), false},
	{"\"a\x00b\"", false},
	{"\"tab\there\"", false},
	{`"\x"`, false},
	{`"\u12"`, false},
	{`"\u12G4"`, false},
	{`"unterminated`, false},
	{`"\`, false},
	{`"\ud800"`, false},
	{`"\udc00"`, false},
	{`"\ud800\ud800"`, false},
	{`"\ud800\\udc00"`, false},
	{`"\ud800x\udc00"`, false},
	{`"\ud800\u`, false},
	{"\"\xff\"", false},
	{"\"\xed\xa0\x80\"", false}, // a surrogate written in UTF-8
	{"\"\xc0\xaf\"", false},     // an overlong encoding
	{"\xef\xbb\xbf{}", false},   // a byte order mark
	{strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth), true},
	{strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1), false},
	{strings.Repeat(`{"a":`, MaxDepth) + "1" + strings.Repeat("}", MaxDepth), true},
	{strings.Repeat(`{"a":`, MaxDepth+1) + "1" + strings.Repeat("}", MaxDepth+1), false},
}

func TestValidAcceptsWhatCheckJSONAccepts(t *testing.T) {
	for _, c := range validCases {
		if got := Valid([]byte(c.body)); got != c.ok {
			t.Errorf("Valid(%q) = %v, want %v", c.body, got, c.ok)
		}
		if got := checkJSONSlow([]byte(c.body)) == nil; got != c.ok {
			t.Errorf("checkJSONSlow(%q) accepts: %v, want %v", c.body, got, c.ok)
		}
	}
}

// The one-pass check must agree with the three passes on every input.
func FuzzValidStrictMatches(f *testing.F) {
	for _, c := range validCases {
		f.Add([]byte(c.body))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		fast := Valid(body)
		err := checkJSONSlow(body)
		if fast != (err == nil) {
			t.Fatalf("%q: one pass accepts %v, three passes say %v", body, fast, err)
		}
	})
}

func BenchmarkCheckJSON(b *testing.B) {
	body := []byte(`{"to":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo#s1","payload":{"from":"a","kind":"message","msg_id":"0123456789abcdef0123456789abcdef","sig":"c2lnc2lnc2lnc2lnc2lnc2lnc2lnc2lnc2lnc2lnc2lnc2lnc2lnc2lnc2lnc2lnc2lnc2lnc2lnc2lnc2lnc2lnc2ln","text":"` + strings.Repeat("hello world, ", 20) + `","to":"b","ts":1699999999000}}`)
	b.Run("one-pass", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		for b.Loop() {
			if !Valid(body) {
				b.Fatal("refused")
			}
		}
	})
	b.Run("three-passes", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		for b.Loop() {
			if checkJSONSlow(body) != nil {
				b.Fatal("refused")
			}
		}
	})
}
