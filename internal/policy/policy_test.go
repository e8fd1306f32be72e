package policy

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/interlink-go/interlink/internal/identity"
)

func TestParse(t *testing.T) {
	k1, k2 := testKey(t, 1), testKey(t, 2)
	spec := mustParseKey(t, specKey)
	small := mustParseKey(t, identityKey)
	tests := []struct {
		name string
		data string
		want []Entry
	}{
		{name: "empty object", data: "{}", want: []Entry{}},
		{name: "empty object with white space", data: " \n{ }\n\n", want: []Entry{}},
		{name: "spec example", data: "{\n  \"my-desktop\": {\n    \"key\": \"" + specKey + "\"\n  }\n}\n",
			want: []Entry{{Name: "my-desktop", Key: spec}}},
		{name: "legacy may field", data: `{"old": {"key": "` + specKey + `", "may": "*"}}`,
			want: []Entry{{Name: "old", Key: spec}}},
		{name: "unknown fields of any type", data: `{"a": {"x": [1, {"y": null}], "key": "` + k1.String() + `", "n": 1e400}}`,
			want: []Entry{{Name: "a", Key: k1}}},
		{name: "sorted by name", data: policyJSON(Entry{"zeta", k1}, Entry{"Alpha", k2}),
			want: []Entry{{Name: "Alpha", Key: k2}, {Name: "zeta", Key: k1}}},
		{name: "petnames with inner spaces and symbols", data: policyJSON(Entry{"bob laptop", k1}, Entry{"ops/db-1 [eu]", k2}),
			want: []Entry{{Name: "bob laptop", Key: k1}, {Name: "ops/db-1 [eu]", Key: k2}}},
		{name: "escaped petname", data: `{"caf\u00e9": {"key": "` + k1.String() + `"}}`,
			want: []Entry{{Name: "café", Key: k1}}},
		{name: "small-order key loads", data: policyJSON(Entry{"zero", small}),
			want: []Entry{{Name: "zero", Key: small}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Parse([]byte(tt.data))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, p.Entries()); diff != "" {
				t.Errorf("entries (-want +got):\n%s", diff)
			}
			if p.Len() != len(tt.want) {
				t.Errorf("Len = %d, want %d", p.Len(), len(tt.want))
			}
			for _, e := range tt.want {
				if name, ok := p.Petname(e.Key); !ok || name != e.Name {
					t.Errorf("Petname(%s) = %q, %v; want %q", e.Key, name, ok, e.Name)
				}
				if k, ok := p.Key(e.Name); !ok || k != e.Key {
					t.Errorf("Key(%q) = %s, %v; want %s", e.Name, k, ok, e.Key)
				}
			}
		})
	}
}

func TestParseRejects(t *testing.T) {
	k1, k2 := testKey(t, 1), testKey(t, 2)
	entry := func(name string, k identity.PublicKey) string {
		return `"` + name + `": {"key": "` + k.String() + `"}`
	}
	tests := []struct {
		name string
		data string
		is   error  // besides ErrInvalid
		msg  string // part of the message
	}{
		{name: "empty file", data: "", msg: "unexpected end"},
		{name: "white space only", data: " \n", msg: "unexpected end"},
		{name: "not JSON", data: "peers", msg: "not valid JSON"},
		{name: "invalid UTF-8 in a petname", data: "{\"a\xff\": {\"key\": \"" + k1.String() + "\"}}", msg: "UTF-8"},
		{name: "invalid UTF-8 outside strings", data: "{}\xff", msg: "UTF-8"},
		{name: "byte order mark", data: "\uFEFF{}", msg: "not valid JSON"},
		{name: "array", data: "[]", msg: "top level is an array"},
		{name: "string", data: `"x"`, msg: "top level is a string"},
		{name: "null", data: "null", msg: "top level is null"},
		{name: "number", data: "1", msg: "top level is a number"},
		{name: "entry is a string", data: `{"a": "` + k1.String() + `"}`, msg: `petname "a": entry is a string`},
		{name: "entry is null", data: `{"a": null}`, msg: `petname "a": entry is null`},
		{name: "entry is an array", data: `{"a": []}`, msg: `entry is an array`},
		{name: "missing key", data: `{"a": {}}`, msg: `petname "a": no "key"`},
		{name: "legacy entry without key", data: `{"a": {"may": "*"}}`, msg: `no "key"`},
		{name: "key is a number", data: `{"a": {"key": 1}}`, msg: `"key" is not a string`},
		{name: "key is null", data: `{"a": {"key": null}}`, msg: `"key" is not a string`},
		{name: "key is an object", data: `{"a": {"key": {}}}`, msg: `"key" is not a string`},
		{name: "key twice in an entry", data: `{"a": {"key": "` + k1.String() + `", "key": "` + k2.String() + `"}}`, msg: `"key" appears twice`},
		{name: "key not base64", data: `{"a": {"key": "not a key"}}`, msg: "base64"},
		{name: "key padded", data: `{"a": {"key": "` + k1.String() + `="}}`, msg: "base64"},
		{name: "key with leading space", data: `{"a": {"key": " ` + k1.String() + `"}}`, msg: "base64"},
		{name: "key too short", data: `{"a": {"key": "` + k1.String()[:42] + `"}}`, msg: "key"},
		{name: "key not a point", data: `{"a": {"key": "` + notAPoint + `"}}`, msg: "not a curve point"},
		{name: "empty key", data: `{"a": {"key": ""}}`, msg: "key"},
		{name: "duplicate key", data: "{" + entry("a", k1) + ", " + entry("b", k1) + "}",
			is: ErrDuplicateKey, msg: `"a" and "b" both have key ` + k1.String()},
		{name: "duplicate petname", data: "{" + entry("a", k1) + ", " + entry("a", k2) + "}",
			is: ErrDuplicateName, msg: `"a"`},
		{name: "duplicate petname, same key", data: "{" + entry("a", k1) + ", " + entry("a", k1) + "}",
			is: ErrDuplicateName},
		{name: "duplicate petname spelled differently", data: "{" + entry("a", k1) + ", " + entry(`\u0061`, k2) + "}",
			is: ErrDuplicateName},
		{name: "petname self", data: policyJSON(Entry{"self", k1}), is: ErrReservedName, msg: `petname "self"`},
		{name: "petname Interlink", data: policyJSON(Entry{"laptop", k2}, Entry{"Interlink", k1}),
			is: ErrReservedName, msg: `petname "Interlink"`},
		{name: "petname INTERLINK", data: policyJSON(Entry{"INTERLINK", k1}), is: ErrReservedName},
		{name: "petname full-width Interlink", data: policyJSON(Entry{"Ｉｎｔｅｒｌｉｎｋ", k1}), is: ErrReservedName},
		{name: "petname with a zero-width space", data: policyJSON(Entry{"Inter\u200blink", k1}), is: ErrInvalidName, msg: "U+200B"},
		{name: "empty petname", data: policyJSON(Entry{"", k1}), is: ErrInvalidName, msg: `invalid petname "": empty`},
		{name: "petname with angle brackets", data: policyJSON(Entry{"<self>", k1}), is: ErrInvalidName, msg: "U+003C"},
		{name: "petname with a quote", data: policyJSON(Entry{`Inter"link`, k1}), is: ErrInvalidName, msg: "U+0022"},
		{name: "petname with surrounding space", data: policyJSON(Entry{" laptop", k1}), is: ErrInvalidName, msg: "white space"},
		{name: "trailing object", data: "{} {}", msg: "data after"},
		{name: "trailing garbage", data: "{}x", msg: "data after"},
		{name: "trailing brace", data: "{}}", msg: "data after"},
		{name: "trailing comma", data: "{" + entry("a", k1) + ",}", msg: "not valid JSON"},
		{name: "missing comma", data: "{" + entry("a", k1) + " " + entry("b", k2) + "}", msg: "not valid JSON"},
		{name: "unterminated", data: "{" + entry("a", k1), msg: "unexpected end"},
		{name: "unterminated entry", data: `{"a": {"key": "` + k1.String() + `"`, msg: "unexpected end"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Parse([]byte(tt.data))
			if err == nil {
				t.Fatalf("Parse(%q) = %v, want an error", tt.data, p.Entries())
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("error %q does not wrap ErrInvalid", err)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("error %q does not wrap %q", err, tt.is)
			}
			if !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("error %q does not say %q", err, tt.msg)
			}
		})
	}
}

func TestMarshal(t *testing.T) {
	spec := mustParseKey(t, specKey)
	k1 := testKey(t, 1)
	p := mustPolicy(t, Entry{"my-desktop", spec}, Entry{"café [b]", k1})
	want := "{\n" +
		"  \"café [b]\": {\n" +
		"    \"key\": \"" + k1.String() + "\"\n" +
		"  },\n" +
		"  \"my-desktop\": {\n" +
		"    \"key\": \"" + specKey + "\"\n" +
		"  }\n" +
		"}\n"
	got := p.Marshal()
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Errorf("Marshal (-want +got):\n%s", diff)
	}
	back, err := Parse(got)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(p.Entries(), back.Entries()); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	if again := back.Marshal(); string(again) != string(got) {
		t.Errorf("second Marshal differs:\n%s", again)
	}

	legacy, err := Parse([]byte(`{"old": {"may": "*", "key": "` + specKey + `"}}`))
	if err != nil {
		t.Fatal(err)
	}
	wantLegacy := "{\n  \"old\": {\n    \"key\": \"" + specKey + "\"\n  }\n}\n"
	if got := string(legacy.Marshal()); got != wantLegacy {
		t.Errorf("Marshal drops legacy fields: got %q, want %q", got, wantLegacy)
	}
	if got := string((&Policy{}).Marshal()); got != "{}\n" {
		t.Errorf("empty policy marshals to %q, want %q", got, "{}\n")
	}
}

func TestIsReservedComparesTheRenderedForm(t *testing.T) {
	tests := []struct {
		name string
		want bool
	}{
		{"self", true},
		{"SELF", true},
		{"Self", true},
		{" self ", true},
		{"\tself\n", true},
		{"se\u200blf", true},
		{"se>lf", true},
		{"<self>", true},
		{"\u017felf", true}, // long s
		{"Interlink", true},
		{"interlink", true},
		{" INTERLINK", true},
		{`"Interlink"`, true},
		{`Inter"link`, true},
		{"Inter\u200blink", true},
		{"Inter\u202elink", true},
		{"Ｉｎｔｅｒｌｉｎｋ", true},
		{"ｓｅｌｆ", true},
		{"Interlin\u212a", true}, // Kelvin sign
		{"Inter&link", true},
		{"Inter\u2028link", true},
		{"\u0406nterlink", true}, // Cyrillic capital byelorussian-ukrainian I
		{"Int\u0435rlink", true}, // Cyrillic small ie
		{"\u0399\u039d\u03a4\u0395RL\u0399\u039d\u039a", true}, // Greek capitals
		{"lnterlink", true}, // small L for capital I
		{"Interl1nk", true},
		{"\u026anterlink", true},      // small capital I
		{"\u00cdnterl\u00efnk", true}, // accents
		{"s\u0435lf", true},           // Cyrillic small ie
		{"\u0455elf", true},           // Cyrillic small dze
		{"seIf", true},                // capital I for small L
		{"se lf", true},               // white space does not count: a hair space would hide
		{"se\u200alf", true},          // hair space
		// Look-alikes from other scripts, found by the UTS #39 skeleton.
		{"\uA4F2NTERLINK", true}, // Lisu ꓲ
		{"\u13A5nterlink", true}, // Cherokee Ꭵ
		{"\uA4E2ELF", true},      // Lisu ꓢ
		{"\u0196nterlink", true}, // Latin capital iota
		{"\u2D4Fnterlink", true}, // Tifinagh yan
		{"Interlin\u0138", true}, // kra: one letter outside ASCII
		// Invisible characters that are not format characters.
		{"Inter\u115Flink", true}, // Hangul choseong filler
		{"Inter\u3164link", true}, // Hangul filler
		{"self\ufe0f", true},      // variation selector
		{"\u2800self", true},      // braille pattern blank
		{"\u034fself", true},      // combining grapheme joiner
		{"Interlinc", false},
		{"lnterlinks", false},
		{"shelf", false},
		{"Seif", false},
		{"interiink", false}, // a small i is not drawn like a small L
		{"myself", false},
		{"self-2", false},
		{"self laptop", false},
		{"Interlin\u0138\u0138", false}, // an extra letter
		{"\u0138nterlin\u0138", false},  // two letters outside ASCII
		{"Interlink2", false},
		{"", false},
		{"laptop", false},
		{"\xffself", true},
	}
	for _, tt := range tests {
		if got := IsReserved(tt.name); got != tt.want {
			t.Errorf("IsReserved(%q) = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// Resembles finds the entry whose petname reads alike a name: the same
// letters as drawn, in some case.
func TestResemblesFindsAPetnameThatReadsAlike(t *testing.T) {
	k1, k2 := testKey(t, 1), testKey(t, 2)
	p := mustPolicy(t, Entry{"alice", k1}, Entry{"Bill", k2})
	for _, tt := range []struct {
		name string
		want string // "" for none
	}{
		{"alice", "alice"},
		{"ALICE", "alice"},
		{"alice\u115f", "alice"}, // Hangul choseong filler
		{"al\u3164ice", "alice"}, // Hangul filler
		{"a\u13DEice", "alice"},  // Cherokee Ꮮ
		{"\uA4EElice", "alice"},  // Lisu ꓮ
		{"\u0430lice", "alice"},  // Cyrillic а
		{"alice\u2800", "alice"}, // braille pattern blank
		{"BiII", "Bill"},         // capital I for small L
		{"Bi11", "Bill"},         // digit one
		{"alice-2", ""},
		{"bob", ""},
		{"biii", ""},
	} {
		e, ok := p.Resembles(tt.name)
		if tt.want == "" {
			if ok {
				t.Errorf("Resembles(%+q) = %q, want none", tt.name, e.Name)
			}
			continue
		}
		if !ok || e.Name != tt.want {
			t.Errorf("Resembles(%+q) = %q, %v; want %q", tt.name, e.Name, ok, tt.want)
		}
	}
}

func TestCheckPetname(t *testing.T) {
	tests := []struct {
		name string
		want error // nil: accepted
		msg  string
	}{
		{"laptop", nil, ""},
		{"bob's mac", ErrInvalidName, "U+0027"},
		{"bob laptop", nil, ""},
		{"café-2", nil, ""},
		{"ops/db [eu] #1", nil, ""},
		{"日本語の名前", nil, ""},
		{strings.Repeat("é", PetnameLimit), nil, ""},
		{strings.Repeat("é", PetnameLimit+1), ErrInvalidName, "longer than 64"},
		{"", ErrInvalidName, "empty"},
		{" laptop", ErrInvalidName, "white space"},
		{"laptop\u00a0", ErrInvalidName, "white space"},
		{"a\xffb", ErrInvalidName, "UTF-8"},
		{"a\tb", ErrInvalidName, "U+0009"},
		{"a\u0085b", ErrInvalidName, "U+0085"},
		{"a\u200db", ErrInvalidName, "U+200D"},
		{"alice\u115f", ErrInvalidName, "U+115F, which is drawn as nothing"},
		{"al\u3164ice", ErrInvalidName, "U+3164, which is drawn as nothing"},
		{"alice\ufe0f", ErrInvalidName, "U+FE0F, which is drawn as nothing"},
		{"alice\U000E0041", ErrInvalidName, "U+E0041"},
		{"a\u2066b", ErrInvalidName, "U+2066"},
		{"a\u2029b", ErrInvalidName, "U+2029"},
		{"a`b", ErrInvalidName, "U+0060"},
		{"a&b", ErrInvalidName, "U+0026"},
		{"se>lf", ErrInvalidName, "U+003E"},
		{"self", ErrReservedName, "self and Interlink"},
		{"INTERLINK", ErrReservedName, ""},
		{"Ｉｎｔｅｒｌｉｎｋ", ErrReservedName, ""},
		{"\uA4F2NTERLINK", ErrReservedName, ""},
		{"Interlin\u0138", ErrReservedName, ""},
	}
	for _, tt := range tests {
		err := CheckPetname(tt.name)
		if tt.want == nil {
			if err != nil {
				t.Errorf("CheckPetname(%q) = %v, want nil", tt.name, err)
			}
			continue
		}
		if !errors.Is(err, tt.want) || !strings.Contains(fmt.Sprint(err), tt.msg) {
			t.Errorf("CheckPetname(%q) = %v, want %v saying %q", tt.name, err, tt.want, tt.msg)
		}
	}
}

func TestReducePetnameKeepsOnlyAllowedCharacters(t *testing.T) {
	tests := []struct{ claimed, want string }{
		{"laptop", "laptop"},
		{`"Interlink"`, "Interlink"},
		{`Inter"link`, "Interlink"},
		{"<self>", "self"},
		{"se>lf", "self"},
		{"Inter\u200blink", "Interlink"},
		{"alice\u115f", "alice"},
		{"al\u3164ice\U000E0041", "alice"},
		{"bob's <desk> & `co`", "bobs desk  co"},
		{" \u202elap\ntop\u2029 ", "laptop"},
		{"< >", ""},
		{strings.Repeat("x", 70), strings.Repeat("x", PetnameLimit)},
		{strings.Repeat("x", 63) + " y", strings.Repeat("x", 63)},
	}
	for _, tt := range tests {
		got := ReducePetname(tt.claimed)
		if got != tt.want {
			t.Errorf("ReducePetname(%q) = %q, want %q", tt.claimed, got, tt.want)
		}
		if got != "" && !IsReserved(got) {
			if err := CheckPetname(got); err != nil {
				t.Errorf("ReducePetname(%q) = %q, which CheckPetname refuses: %v", tt.claimed, got, err)
			}
		}
	}
}

func TestZeroPolicy(t *testing.T) {
	var p Policy
	if _, ok := p.Petname(testKey(t, 1)); ok {
		t.Error("zero policy names a key")
	}
	if _, ok := p.Key("a"); ok {
		t.Error("zero policy has a petname")
	}
	if p.Len() != 0 || len(p.Entries()) != 0 {
		t.Errorf("zero policy has entries: %v", p.Entries())
	}
}
