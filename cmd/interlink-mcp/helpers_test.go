package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// waitFor polls cond until it holds, failing after 15 s.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// receiptsOf parses the receipts out of a receive_messages result.
func receiptsOf(t testing.TB, text string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(text, "\n") {
		_, js, ok := strings.Cut(line, "] Receipt: ")
		if !ok || !strings.HasPrefix(line, "[") {
			continue
		}
		var r map[string]any
		if err := json.Unmarshal([]byte(js), &r); err != nil {
			t.Fatalf("receipt %q: %v", js, err)
		}
		out = append(out, r)
	}
	return out
}
