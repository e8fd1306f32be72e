package main

import (
	"testing"
	"time"

	"github.com/interlink-go/interlink/internal/testutil"
)

// waitFor polls cond until it holds, failing after 15 s.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	testutil.Eventually(t, 15*time.Second, what, cond)
}
