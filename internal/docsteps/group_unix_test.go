//go:build unix

package docsteps

import (
	"os/exec"
	"syscall"
)

// ownGroup puts cmd's process in a process group of its own, so that
// killGroup can end whatever it started, even a bus left running by a
// failed step.
func ownGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// killGroup kills the process group that ownGroup made for cmd.
func killGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
