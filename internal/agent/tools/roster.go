package tools

import (
	"fmt"
	"strings"

	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/relay"
	"github.com/interlink-go/interlink/internal/render"
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
// git repository and quoted summary, each cleaned, joined by " · ".
func sessionLine(s identity.SessionInfo) string {
	parts := []string{untrusted.Label(s.SessionID)}
	if cwd := untrusted.Label(s.Cwd); cwd != "" {
		parts = append(parts, cwd)
	}
	if g := untrusted.Label(s.GitRoot); g != "" {
		parts = append(parts, "git:"+g)
	}
	if sum := untrusted.Summary(s.Summary); sum != "" {
		parts = append(parts, `"`+sum+`"`)
	}
	// Labels are already free of control and format characters; Inert
	// also breaks any spelling of interlink's block tags in them.
	return render.Inert(strings.Join(parts, " · "))
}

// sessionList lists sessions for an error message, one per line.
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
