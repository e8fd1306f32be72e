package route

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseFormat(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want Route
		bare bool
	}{
		{name: "key and session", in: "K#s", want: Route{Key: "K", Session: "s"}},
		{name: "bare key", in: "K", want: Route{Key: "K"}, bare: true},
		{name: "trailing hash stays in key", in: "K#", want: Route{Key: "K#"}, bare: true},
		{name: "session keeps later hashes", in: "K#a#b", want: Route{Key: "K", Session: "a#b"}},
		{name: "empty", in: "", want: Route{}, bare: true},
		{name: "lone hash", in: "#", want: Route{Key: "#"}, bare: true},
		{name: "empty key with session", in: "#s", want: Route{Session: "s"}},
		{name: "double hash", in: "K##", want: Route{Key: "K", Session: "#"}},
		{
			name: "realistic",
			in:   "cG9zdGFsLXNlcnZpY2Uta2V5LTMyLWJ5dGVzLWxvbmc#1b4e28ba-2fa1-11d2-883f-0016d3cca427",
			want: Route{Key: "cG9zdGFsLXNlcnZpY2Uta2V5LTMyLWJ5dGVzLWxvbmc", Session: "1b4e28ba-2fa1-11d2-883f-0016d3cca427"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Parse(tt.in)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Parse(%q) mismatch (-want +got):\n%s", tt.in, diff)
			}
			if got.Bare() != tt.bare {
				t.Errorf("Parse(%q).Bare() = %v, want %v", tt.in, got.Bare(), tt.bare)
			}
			if s := got.String(); s != tt.in {
				t.Errorf("Parse(%q).String() = %q, want the input back", tt.in, s)
			}
		})
	}
}

func TestNew(t *testing.T) {
	tests := []struct {
		name         string
		key, session string
		want         string
		bare         bool
	}{
		{name: "empty session is bare", key: "K", session: "", want: "K", bare: true},
		{name: "with session", key: "K", session: "s", want: "K#s"},
		{name: "session with hash", key: "K", session: "a#b", want: "K#a#b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := New(tt.key, tt.session)
			if got := r.String(); got != tt.want {
				t.Errorf("New(%q, %q).String() = %q, want %q", tt.key, tt.session, got, tt.want)
			}
			if r.Bare() != tt.bare {
				t.Errorf("New(%q, %q).Bare() = %v, want %v", tt.key, tt.session, r.Bare(), tt.bare)
			}
			if diff := cmp.Diff(r, Parse(r.String())); diff != "" {
				t.Errorf("Parse(String()) mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// FuzzRoute checks that Parse never panics, that String undoes Parse for
// every input, and that a route whose key has no "#" survives String then
// Parse.
func FuzzRoute(f *testing.F) {
	for _, s := range []string{"", "K", "K#", "K#s", "K#a#b", "#", "##", "#s", "K##", "a\x00#\xff", "ключ#сессия"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r := Parse(s)
		if got := r.String(); got != s {
			t.Fatalf("Parse(%q).String() = %q", s, got)
		}
		if r.Bare() != (r.Session == "") {
			t.Fatalf("Parse(%q).Bare() = %v with session %q", s, r.Bare(), r.Session)
		}
		if !r.Bare() && strings.Contains(r.Key, "#") {
			t.Fatalf("Parse(%q) key %q holds a # although a session was split off", s, r.Key)
		}
		if again := Parse(r.String()); again != r {
			t.Fatalf("Parse not stable for %q: %#v then %#v", s, r, again)
		}

		// Build a route from the input the other way: a key without "#"
		// and the whole input as session.
		built := New(strings.ReplaceAll(s, "#", ""), s)
		if back := Parse(built.String()); back != built {
			t.Fatalf("Parse(%q) = %#v, want %#v", built.String(), back, built)
		}
	})
}

func ExampleParse() {
	for _, s := range []string{"K#s", "K", "K#", "K#a#b"} {
		r := Parse(s)
		fmt.Printf("%q: key %q, session %q, bare %v\n", s, r.Key, r.Session, r.Bare())
	}
	// Output:
	// "K#s": key "K", session "s", bare false
	// "K": key "K", session "", bare true
	// "K#": key "K#", session "", bare true
	// "K#a#b": key "K", session "a#b", bare false
}
