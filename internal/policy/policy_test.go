package policy

import (
	"errors"
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
		{name: "arbitrary petnames", data: policyJSON(Entry{"", k1}, Entry{" spaced <b>&", k2}),
			want: []Entry{{Name: "", Key: k1}, {Name: " spaced <b>&", Key: k2}}},
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
	p := mustPolicy(t, Entry{"my-desktop", spec}, Entry{"<b>&laptop", k1})
	want := "{\n" +
		"  \"<b>&laptop\": {\n" +
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

func TestIsReserved(t *testing.T) {
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
		{"Interlink", true},
		{"interlink", true},
		{" INTERLINK", true},
		{"myself", false},
		{"self-2", false},
		{"self laptop", false},
		{"Interlink2", false},
		{"", false},
		{"laptop", false},
	}
	for _, tt := range tests {
		if got := IsReserved(tt.name); got != tt.want {
			t.Errorf("IsReserved(%q) = %v, want %v", tt.name, got, tt.want)
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
