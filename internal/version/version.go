// Package version reports which release of interlink a binary is.
//
// The release number says nothing about the wire format on its own: every
// release of this module speaks the format of interlink 0.9 and newer, whose
// signatures use the domain "interlink-v2", so its programs interoperate with
// those releases.
package version

import (
	"runtime/debug"
	"strings"
)

// Version is the release stamped in at link time, for example with
//
//	go build -ldflags "-X github.com/interlink-go/interlink/internal/version.Version=v0.1.0"
//
// Empty means not stamped; [String] then looks elsewhere.
var Version = ""

// fallback is reported when neither the linker nor the build info names a
// version, as for a plain "go build" outside version control.
const fallback = "v0.1.0-dev"

// String returns the version of the running binary: [Version] when it is set,
// else the main module's version from the build info (set by "go install
// module@version" and, for builds inside a version control checkout, derived
// from its tags and commit; an untagged checkout gives v0.1.0-dev+<commit>),
// else "v0.1.0-dev".
func String() string { return resolve(Version, debug.ReadBuildInfo) }

// resolve applies the order documented on [String]; read stands in for
// [debug.ReadBuildInfo].
func resolve(linked string, read func() (*debug.BuildInfo, bool)) string {
	if linked != "" {
		return linked
	}
	if info, ok := read(); ok {
		if v := info.Main.Version; v != "" && v != "(devel)" {
			return untagged(v)
		}
	}
	return fallback
}

// untagged turns the pseudo-version Go derives for a checkout without a
// release tag, v0.0.0-<time>-<commit>[+dirty], into the development
// version with the commit as build metadata: v0.1.0-dev+<commit>[.dirty].
// Releases start at 0.1.0, so a v0.0.0 would read as older than any of
// them. Other versions are returned unchanged.
func untagged(v string) string {
	rest, ok := strings.CutPrefix(v, "v0.0.0-")
	if !ok {
		return v
	}
	rest, dirty := strings.CutSuffix(rest, "+dirty")
	i := strings.LastIndexByte(rest, '-')
	if i < 0 {
		return v
	}
	out := fallback + "+" + rest[i+1:]
	if dirty {
		out += ".dirty"
	}
	return out
}
