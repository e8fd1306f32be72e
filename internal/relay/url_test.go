package relay

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseURLs(t *testing.T) {
	tests := []struct {
		name    string
		in      []string
		want    []string
		wantErr error
		errText string
	}{
		{name: "one", in: []string{"http://127.0.0.1:9440"}, want: []string{"http://127.0.0.1:9440"}},
		{name: "trailing slash", in: []string{"http://127.0.0.1:9440/"}, want: []string{"http://127.0.0.1:9440"}},
		{name: "path prefix", in: []string{"http://10.0.0.2:9440/prefix/"}, want: []string{"http://10.0.0.2:9440/prefix"}},
		{name: "commas and whitespace", in: []string{" http://a:1 , http://b:2,,", "\thttp://c:3\n"},
			want: []string{"http://a:1", "http://b:2", "http://c:3"}},
		{name: "duplicates keep order", in: []string{"http://b:2,http://a:1", "http://b:2/", "http://a:1"},
			want: []string{"http://b:2", "http://a:1"}},
		{name: "repeated flag", in: []string{"http://a:1", "http://b:2"}, want: []string{"http://a:1", "http://b:2"}},
		{name: "empty list", in: nil, wantErr: ErrNoURL},
		{name: "only separators", in: []string{" , ,", ""}, wantErr: ErrNoURL},
		{name: "https", in: []string{"http://a:1,https://relay.example"}, want: []string{"http://a:1", "https://relay.example"}},
		{name: "https with a path prefix", in: []string{"https://relay.example:8443/interlink/"}, want: []string{"https://relay.example:8443/interlink"}},
		{name: "uppercase https", in: []string{"HTTPS://relay.example"}, want: []string{"HTTPS://relay.example"}},
		{name: "other scheme", in: []string{"ws://relay:1"}, wantErr: ErrBadURL, errText: "use an https:// URL"},
		{name: "tls-looking scheme", in: []string{"wss://relay:1"}, wantErr: ErrBadURL, errText: "use an https:// URL"},
		{name: "no scheme", in: []string{"127.0.0.1:9440"}, wantErr: ErrBadURL, errText: `"127.0.0.1:9440": no scheme; did you mean "http://127.0.0.1:9440"?`},
		{name: "no scheme, ipv6", in: []string{"[::1]:9440/p"}, wantErr: ErrBadURL, errText: `did you mean "http://[::1]:9440/p"?`},
		{name: "bare host", in: []string{"relay"}, wantErr: ErrBadURL, errText: `did you mean "http://relay"?`},
		{name: "host name and port", in: []string{"localhost:9440"}, wantErr: ErrBadURL, errText: `did you mean "http://localhost:9440"?`},
		{name: "scheme without slashes", in: []string{"http:relay"}, wantErr: ErrBadURL},
		{name: "no host", in: []string{"http:///x"}, wantErr: ErrBadURL, errText: "no host"},
		{name: "port only", in: []string{"http://:9440"}, wantErr: ErrBadURL, errText: "no host"},
		{name: "unparsable", in: []string{"http://a b:1"}, wantErr: ErrBadURL},
		{name: "query", in: []string{"http://a:1/?x=1"}, wantErr: ErrBadURL, errText: "query"},
		{name: "fragment", in: []string{"http://a:1#x"}, wantErr: ErrBadURL, errText: "fragment"},
		{name: "blank in path", in: []string{"http://0/ /"}, wantErr: ErrBadURL, errText: "white space"},
		{name: "tab in host", in: []string{"http://a\tb:1"}, wantErr: ErrBadURL},
		{name: "control in path", in: []string{"http://a:1/p\x01"}, wantErr: ErrBadURL, errText: "control character"},
		{name: "user info", in: []string{"http://u:p@a:1"}, wantErr: ErrBadURL, errText: "user information"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseURLs(tt.in)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("ParseURLs(%q) error = %v, want %v", tt.in, err, tt.wantErr)
				}
				if !strings.Contains(err.Error(), tt.errText) {
					t.Errorf("error %q does not contain %q", err, tt.errText)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseURLs(%q): %v", tt.in, err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ParseURLs(%q) (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

// FuzzParseURLs checks that ParseURLs never panics and that its output is a
// fixed point: parsing the result again returns it unchanged.
func FuzzParseURLs(f *testing.F) {
	for _, s := range []string{"http://a:1/", " http://a:1 ,http://b/p/", "https://x", "http://[::1]:9/", "", "http://0/ /"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseURLs([]string{s})
		if err != nil {
			return
		}
		again, err := ParseURLs(got)
		if err != nil {
			t.Fatalf("ParseURLs(%q) = %q, which fails again: %v", s, got, err)
		}
		if diff := cmp.Diff(got, again); diff != "" {
			t.Fatalf("not a fixed point (-first +second):\n%s", diff)
		}
	})
}
