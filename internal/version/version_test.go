package version

import (
	"runtime/debug"
	"testing"
)

func TestResolve(t *testing.T) {
	info := func(v string) func() (*debug.BuildInfo, bool) {
		return func() (*debug.BuildInfo, bool) {
			return &debug.BuildInfo{Main: debug.Module{Path: "github.com/interlink-go/interlink", Version: v}}, true
		}
	}
	noInfo := func() (*debug.BuildInfo, bool) { return nil, false }

	tests := []struct {
		name   string
		linked string
		read   func() (*debug.BuildInfo, bool)
		want   string
	}{
		{"linker wins", "v0.1.0", info("v0.2.0"), "v0.1.0"},
		{"build info", "", info("v0.3.1"), "v0.3.1"},
		{"untagged checkout", "", info("v0.0.0-20260101000000-0123456789ab"), "v0.1.0-dev+0123456789ab"},
		{"untagged, dirty", "", info("v0.0.0-20260101000000-0123456789ab+dirty"), "v0.1.0-dev+0123456789ab.dirty"},
		{"after a tag", "", info("v0.1.1-0.20260101000000-0123456789ab"), "v0.1.1-0.20260101000000-0123456789ab"},
		{"devel", "", info("(devel)"), fallback},
		{"empty module version", "", info(""), fallback},
		{"no build info", "", noInfo, fallback},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := resolve(tt.linked, tt.read); got != tt.want {
				t.Errorf("resolve(%q) = %q, want %q", tt.linked, got, tt.want)
			}
		})
	}
}

func TestStringUsesVersion(t *testing.T) {
	old := Version
	t.Cleanup(func() { Version = old })

	Version = "v9.8.7"
	if got := String(); got != "v9.8.7" {
		t.Errorf("String() = %q with Version set, want %q", got, "v9.8.7")
	}
	Version = ""
	if got := String(); got == "" {
		t.Error("String() is empty with Version unset")
	}
}
