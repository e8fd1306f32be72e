package route

import (
	"bytes"
	"errors"
	"io"
	"regexp"
	"strings"
	"testing"
)

func TestValidateSession(t *testing.T) {
	tests := []struct {
		name string
		id   string
		ok   bool
	}{
		{name: "uuid", id: "1b4e28ba-2fa1-11d2-883f-0016d3cca427", ok: true},
		{name: "fallback hex", id: "0a1b2c3d", ok: true},
		{name: "single char", id: "a", ok: true},
		{name: "hash and space", id: "a#b c", ok: true},
		{name: "three dots", id: "...", ok: true},
		{name: "non-ascii", id: "sitzung-ä", ok: true},
		{name: "max length", id: strings.Repeat("a", 128), ok: true},
		{name: "max length multibyte", id: strings.Repeat("é", 64), ok: true},
		{name: "empty", id: ""},
		{name: "too long", id: strings.Repeat("a", 129)},
		{name: "too long multibyte", id: strings.Repeat("é", 64) + "a"},
		{name: "dot", id: "."},
		{name: "dot dot", id: ".."},
		{name: "slash", id: "a/b"},
		{name: "traversal", id: "../x"},
		{name: "backslash", id: `a\b`},
		{name: "colon", id: "c:x"},
		{name: "nul", id: "a\x00b"},
		{name: "newline", id: "a\nb"},
		{name: "carriage return", id: "a\rb"},
		{name: "tab", id: "a\tb"},
		{name: "escape", id: "a\x1b[31m"},
		{name: "unit separator", id: "a\x1f"},
		{name: "del", id: "a\x7f"},
		{name: "c1 control", id: "a\u0085b"},
		{name: "c1 csi", id: "a\u009b"},
		{name: "right-to-left override", id: "a\u202eb"},
		{name: "bidi isolate", id: "a\u2066b\u2069"},
		{name: "zero-width space", id: "a\u200bb"},
		{name: "zero-width joiner", id: "a\u200db"},
		{name: "byte order mark", id: "\ufeffa"},
		{name: "soft hyphen", id: "a\u00adb"},
		{name: "tag character", id: "a\U000e0041"},
		{name: "hangul filler", id: "a\u3164"},
		{name: "hangul choseong filler", id: "\u115fa"},
		{name: "variation selector", id: "a\ufe0f"},
		{name: "combining grapheme joiner", id: "a\u034fb"},
		{name: "line separator", id: "a\u2028b"},
		{name: "paragraph separator", id: "a\u2029b"},
		{name: "invalid utf-8", id: "a\xffb"},
		{name: "truncated utf-8", id: "a\xc3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ValidateSession(tt.id)
			if tt.ok {
				if err != nil {
					t.Fatalf("ValidateSession(%q) = %v, want nil", tt.id, err)
				}
				return
			}
			if !errors.Is(err, ErrInvalidSession) {
				t.Fatalf("ValidateSession(%q) = %v, want %v", tt.id, err, ErrInvalidSession)
			}
			if msg := err.Error(); msg == ErrInvalidSession.Error() || strings.ContainsAny(msg, "\x00\n\r") {
				t.Errorf("ValidateSession(%q) error %q gives no reason or holds raw control bytes", tt.id, msg)
			}
		})
	}
}

type failingReader struct{ err error }

func (r failingReader) Read([]byte) (int, error) { return 0, r.err }

func TestNewSessionID(t *testing.T) {
	hex8 := regexp.MustCompile(`^[0-9a-f]{8}$`)

	t.Run("format", func(t *testing.T) {
		seen := make(map[string]bool)
		for range 64 {
			id, err := NewSessionID()
			if err != nil {
				t.Fatalf("NewSessionID() error: %v", err)
			}
			if !hex8.MatchString(id) {
				t.Fatalf("NewSessionID() = %q, want 8 lowercase hex characters", id)
			}
			if err := ValidateSession(id); err != nil {
				t.Fatalf("ValidateSession(%q) = %v", id, err)
			}
			seen[id] = true
		}
		// 64 draws from 2^32 values collide with probability below 1e-6.
		if len(seen) < 63 {
			t.Errorf("NewSessionID gave only %d distinct ids in 64 calls", len(seen))
		}
	})

	t.Run("fixed source", func(t *testing.T) {
		id, err := newSessionIDFrom(bytes.NewReader([]byte{0xde, 0xad, 0xbe, 0xef, 0x00}))
		if err != nil {
			t.Fatalf("newSessionIDFrom error: %v", err)
		}
		if id != "deadbeef" {
			t.Errorf("newSessionIDFrom = %q, want %q", id, "deadbeef")
		}
	})

	errBroken := errors.New("entropy source broken")
	failures := []struct {
		name string
		r    io.Reader
		want error
	}{
		{name: "read error", r: failingReader{err: errBroken}, want: errBroken},
		{name: "short read", r: bytes.NewReader([]byte{1, 2, 3}), want: io.ErrUnexpectedEOF},
		{name: "empty source", r: bytes.NewReader(nil), want: io.EOF},
	}
	for _, tt := range failures {
		t.Run(tt.name, func(t *testing.T) {
			id, err := newSessionIDFrom(tt.r)
			if !errors.Is(err, tt.want) {
				t.Fatalf("newSessionIDFrom error = %v, want %v", err, tt.want)
			}
			if id != "" {
				t.Errorf("newSessionIDFrom returned id %q alongside an error", id)
			}
		})
	}
}
