package codex_test

import (
	"slices"
	"testing"

	"github.com/interlink-go/interlink/internal/testutil"
)

// Codex's store of failed deliveries does not depend on the mailbox, which
// announces unread messages again whether or not a notice was saved.
func TestCodexDoesNotDependOnTheMailbox(t *testing.T) {
	if deps := testutil.Deps(t, "github.com/interlink-go/interlink/internal/codex"); slices.Contains(deps, "github.com/interlink-go/interlink/internal/mailbox") {
		t.Error("internal/codex depends on internal/mailbox")
	}
}
