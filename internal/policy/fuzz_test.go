package policy

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// FuzzParse: Parse never panics, accepts only valid JSON, and a policy it
// accepts marshals to a file that parses to the same entries and marshals
// to the same bytes again.
func FuzzParse(f *testing.F) {
	k1, k2 := testKey(f, 1), testKey(f, 2)
	for _, s := range []string{
		"{}",
		policyJSON(Entry{"laptop", k1}, Entry{"<desk> & co", k2}),
		`{"old": {"key": "` + specKey + `", "may": "*"}}`,
		policyJSON(Entry{"a", k1}, Entry{"b", k1}),
		policyJSON(Entry{"a", k1}, Entry{"a", k2}),
		`{"a": {"key": "` + notAPoint + `"}}`,
		`{"a": {"key": "` + identityKey + `"}}`,
		`{"a": {"key": 1}}`,
		`{"a": {"key": "x", "key": "y"}}`,
		"{} []",
		"[]",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse(data)
		if err != nil {
			return
		}
		if !json.Valid(data) {
			t.Fatalf("accepted invalid JSON %q", data)
		}
		out := p.Marshal()
		back, err := Parse(out)
		if err != nil {
			t.Fatalf("Parse of Marshal output %q: %v", out, err)
		}
		if diff := cmp.Diff(p.Entries(), back.Entries()); diff != "" {
			t.Fatalf("round trip (-first +second):\n%s", diff)
		}
		if again := back.Marshal(); !bytes.Equal(out, again) {
			t.Fatalf("Marshal not stable:\n%q\n%q", out, again)
		}
		for _, e := range p.Entries() {
			if name, ok := p.Petname(e.Key); !ok || name != e.Name {
				t.Fatalf("Petname(%s) = %q, %v; want %q", e.Key, name, ok, e.Name)
			}
		}
	})
}
