package tools

import (
	"fmt"
	"strings"

	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/relay"
	"github.com/interlink-go/interlink/internal/untrusted"
)

// dayMS is a day in milliseconds.
const dayMS = 86_400_000

// ago renders a duration in milliseconds the way session lists do: seconds
// below 90 s, minutes below 90 min, hours below 48 h, then days.
func ago(ms uint64) string {
	s := ms / 1000
	switch {
	case s < 90:
		return fmt.Sprintf("%ds", s)
	case s < 5400:
		return fmt.Sprintf("%dm", s/60)
	case s < 172800:
		return fmt.Sprintf("%dh", s/3600)
	default:
		return fmt.Sprintf("%d days", s/86400)
	}
}

// sessionLine describes a roster session on one line: id, working folder,
// git repository and summary, each cleaned ([untrusted.Label],
// [untrusted.Summary]) and shown by [claim], joined by " · ". Every field
// is the session's own unverified claim, so none can carry the listing's
// own marks: those go before the line (see [Presence]).
func sessionLine(s identity.SessionInfo) string {
	parts := []string{claim(untrusted.Label(s.SessionID))}
	if cwd := untrusted.Label(s.Cwd); cwd != "" {
		parts = append(parts, claim(cwd))
	}
	if g := untrusted.Label(s.GitRoot); g != "" {
		parts = append(parts, "git:"+claim(g))
	}
	if sum := untrusted.Summary(s.Summary); sum != "" {
		parts = append(parts, untrusted.Quote(sum))
	}
	return strings.Join(parts, " · ")
}

// claim shows a value another identity announced: as it is when it is
// plain (only ASCII letters, digits and - _ . / ~ + @, as session ids,
// folders and repository names mostly are), else quoted with
// [untrusted.Quote]. A plain value holds no space, bracket, quote or arrow,
// and a quoted one ends at the only unescaped double quote, so neither can
// pass for the marks the listing adds ("← this session", "[you]",
// "(away · …)", another field) or for interlink's tags.
func claim(v string) string {
	if v != "" && strings.IndexFunc(v, func(r rune) bool { return !plain(r) }) < 0 {
		return v
	}
	return untrusted.Quote(v)
}

// plain reports whether r may stand in an unquoted [claim].
func plain(r rune) bool {
	return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || strings.ContainsRune("-_./~+@", r)
}

// sessionList lists sessions for an error message, one per line. Its away
// note follows the line: every field before it is plain or quoted
// ([claim]), so none can end in a note of its own.
func sessionList(entries []relay.Entry) string {
	lines := make([]string, len(entries))
	for i, e := range entries {
		lines[i] = "  " + sessionLine(e.Session)
		if !e.Live {
			lines[i] += fmt.Sprintf(" (away, last seen %s)", ago(e.AgeMS))
		}
	}
	return strings.Join(lines, "\n")
}
