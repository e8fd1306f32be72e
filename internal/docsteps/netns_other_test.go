//go:build !linux

package docsteps

import (
	"fmt"
	"os"
	"os/exec"
)

// isolate does nothing here; the walkthrough runs on Linux only.
func isolate(*exec.Cmd) {}

// netnsMain is never called here: isolate starts no namespace.
func netnsMain(string) int {
	fmt.Fprintln(os.Stderr, "docsteps: no network namespaces here")
	return 1
}
