// Package host names the host applications an interlink session runs
// under: Claude Code and Codex CLI. The server and doctor read the name from
// the same flag and check it the same way.
package host

import "errors"

// Kind is a host application.
type Kind string

// The hosts.
const (
	Claude Kind = "claude"
	Codex  Kind = "codex"
)

// ErrUnknown reports a name that is no host.
var ErrUnknown = errors.New("want claude or codex")

// Parse returns the host named s, which must be "claude" or "codex" as
// written; anything else is [ErrUnknown].
func Parse(s string) (Kind, error) {
	switch k := Kind(s); k {
	case Claude, Codex:
		return k, nil
	}
	return "", ErrUnknown
}
