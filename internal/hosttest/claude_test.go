//go:build hosttest

package hosttest

import "testing"

func TestClaudeMCPAddList(t *testing.T) {
	claudeCLI(t)
}
