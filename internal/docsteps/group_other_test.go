//go:build !unix

package docsteps

import "os/exec"

// ownGroup does nothing here; the walkthrough runs on Linux only.
func ownGroup(*exec.Cmd) {}

// killGroup does nothing here; the walkthrough runs on Linux only.
func killGroup(*exec.Cmd) {}
