package target

import (
	"testing"
	"time"
)

// TestParseStatCPUCountsFromTheLastParenthesis: a command name with
// spaces and parentheses does not shift the fields; utime and stime add.
func TestParseStatCPUCountsFromTheLastParenthesis(t *testing.T) {
	for name, line := range map[string]string{
		"plain":  "123 (interlink-bus) S 1 123 123 0 -1 4194560 500 0 0 0 250 50 0 0 20 0 7 0 100 0 0",
		"spaces": "123 (a ) b (c) S 1 123 123 0 -1 4194560 500 0 0 0 250 50 0 0 20 0 7 0 100 0 0",
	} {
		got, err := parseStatCPU(line)
		if err != nil || got != 3*time.Second {
			t.Errorf("%s: %v, %v; want 3s", name, got, err)
		}
	}
	for _, bad := range []string{"", "123 interlink-bus S 1", "1 (x) S 1 2 3 4 5 6 7 8 9 10 -5 1 0", "1 (x) S 1 2"} {
		if _, err := parseStatCPU(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}
