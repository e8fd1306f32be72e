package reqsign

import (
	"net/http"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"
)

// FuzzParseHeaders feeds arbitrary header values to the parser. Properties:
// it never panics; a refusal is a HeaderError with a sentinel; what it
// accepts re-encodes to exactly the values given (every value has one
// spelling), and parses again to the same result.
func FuzzParseHeaders(f *testing.F) {
	ar, err := txtar.ParseFile("testdata/vectors.txtar")
	if err != nil {
		f.Fatal(err)
	}
	for _, file := range ar.Files {
		if !strings.HasSuffix(file.Name, "/headers") {
			continue
		}
		var vals []string
		for _, line := range strings.Split(strings.TrimSpace(string(file.Data)), "\n") {
			_, v, _ := strings.Cut(line, ": ")
			vals = append(vals, v)
		}
		f.Add(vals[0], vals[1], vals[2], vals[3])
	}
	f.Add("", "0", "", "")
	f.Add("AQAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "18446744073709551615", "AAAAAAAAAAAAAAAAAAAAAA=", "a\nb")
	f.Fuzz(func(t *testing.T, key, tm, nonce, sig string) {
		hdr := http.Header{}
		for i, v := range []string{key, tm, nonce, sig} {
			if v != "" {
				hdr.Set(headers[i], v)
			}
		}
		h, err := ParseHeaders(hdr)
		if err != nil {
			he, ok := err.(*HeaderError)
			if !ok || (he.Err != ErrMissing && he.Err != ErrMalformed) {
				t.Fatalf("refusal %#v is not a HeaderError with a sentinel", err)
			}
			return
		}
		out := http.Header{}
		h.Set(out)
		for i, v := range []string{key, tm, nonce, sig} {
			if got := out.Get(headers[i]); got != v {
				t.Fatalf("%s: %q re-encodes as %q", headers[i], v, got)
			}
		}
		h2, err := ParseHeaders(out)
		if err != nil || h2 != h {
			t.Fatalf("re-parse: %v, %+v != %+v", err, h2, h)
		}
	})
}
