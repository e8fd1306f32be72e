package mailbox_test

import (
	"slices"
	"testing"

	"github.com/interlink-go/interlink/internal/testutil"
)

// The mailbox sits below the trust gate: it takes the replay window from
// the protocol package, so it never depends on the gate.
func TestMailboxDoesNotDependOnTheGate(t *testing.T) {
	if deps := testutil.Deps(t, "github.com/interlink-go/interlink/internal/mailbox"); slices.Contains(deps, "github.com/interlink-go/interlink/internal/gate") {
		t.Error("internal/mailbox depends on internal/gate")
	}
}
