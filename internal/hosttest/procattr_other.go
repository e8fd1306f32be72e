//go:build hosttest && !linux

package hosttest

import "syscall"

// procAttr puts a started process in a process group of its own. Only
// Linux can also tie its life to the test process's.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
