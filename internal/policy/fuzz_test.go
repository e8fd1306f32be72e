package policy

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

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

// FuzzPetname: CheckPetname never panics; a name it accepts holds only
// characters rendering keeps, has no surrounding white space, is at most
// PetnameLimit characters and is not reserved; peers.json loading applies
// exactly the same rule; ReducePetname always yields an acceptable petname,
// a reserved word or nothing, and reducing twice changes nothing more.
func FuzzPetname(f *testing.F) {
	for _, s := range []string{
		"laptop", "bob laptop", "self", "Interlink", `"Interlink"`, `Inter"link`, "<self>", "INTERLINK",
		"Ｉｎｔｅｒｌｉｎｋ", "Inter\u200blink", "se>lf", " self ", "a\xffb", "\u202eknil", "bob's <desk> & `co`",
		"", " ", "\u00a0x", strings.Repeat("é", 65), "Interlin\u212a", "\u017felf", "\u0406nterlink", "lnterl1nk", "s\u0435lf",
		"\uA4F2NTERLINK", "Interlin\u0138", "alice\u115f", "\u2800self",
	} {
		f.Add(s)
	}
	k := testKey(f, 1)
	f.Fuzz(func(t *testing.T, name string) {
		err := CheckPetname(name)
		if err == nil {
			if !utf8.ValidString(name) || name == "" || utf8.RuneCountInString(name) > PetnameLimit {
				t.Fatalf("accepted %q: empty, too long or not UTF-8", name)
			}
			if strings.TrimSpace(name) != name {
				t.Fatalf("accepted %q with surrounding white space", name)
			}
			if strings.IndexFunc(name, renderUnsafe) >= 0 {
				t.Fatalf("accepted %q holding a character rendering changes", name)
			}
			if IsReserved(name) {
				t.Fatalf("accepted the reserved %q", name)
			}
		} else if !errors.Is(err, ErrInvalidName) && !errors.Is(err, ErrReservedName) {
			t.Fatalf("CheckPetname(%q) = %v, wraps neither sentinel", name, err)
		}
		if IsReserved(name) && err == nil {
			t.Fatalf("reserved %q passes", name)
		}
		if utf8.ValidString(name) {
			_, perr := Parse([]byte(policyJSON(Entry{name, k})))
			if (perr == nil) != (err == nil) {
				t.Fatalf("Parse and CheckPetname disagree on %q: %v / %v", name, perr, err)
			}
		}
		if err == nil {
			if _, ok := mustPolicy(t, Entry{name, k}).Resembles(strings.ToUpper(name)); !ok {
				t.Fatalf("%q does not resemble itself in upper case", name)
			}
		}
		r := ReducePetname(name)
		if r != "" && !IsReserved(r) {
			if err := CheckPetname(r); err != nil {
				t.Fatalf("ReducePetname(%q) = %q, refused: %v", name, r, err)
			}
		}
		if again := ReducePetname(r); again != r {
			t.Fatalf("ReducePetname not idempotent: %q -> %q -> %q", name, r, again)
		}
	})
}
