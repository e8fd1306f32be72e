//go:build hosttest && linux

package hosttest

import "syscall"

// procAttr puts a started process in a process group of its own and has
// the kernel kill it when the test process dies, so that a test run killed
// from outside (a timeout's SIGKILL) leaves no bus or host behind.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
