package setup

import (
	"runtime"
	"strings"
)

// ShellQuote quotes s for the shell that runs hook commands on this system.
func ShellQuote(s string) string { return shellQuoteFor(runtime.GOOS, s) }

// shellQuoteFor quotes s for the shell of goos: single quotes on Unix-like
// systems, double quotes on Windows. Plain words stay as they are.
func shellQuoteFor(goos, s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:@+=,", r))
	}) < 0 {
		return s
	}
	if goos == "windows" {
		return `"` + strings.ReplaceAll(s, `"`, `\"`) + `"`
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
