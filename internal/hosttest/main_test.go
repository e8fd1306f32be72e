//go:build hosttest

package hosttest

import (
	"os"
	"testing"
)

func TestMain(m *testing.M) {
	code := m.Run()
	removeBinaries()
	os.Exit(code)
}
