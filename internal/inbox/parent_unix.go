//go:build unix

package inbox

import (
	"os"
	"strconv"
	"strings"
)

// parentWatch tells whether the host that started this listener has gone.
// Claude Code runs a hook as `sh -c <command>` in a process group of its
// own; when Claude Code exits, nothing ends the listener, which would hold
// the session's listener lock for up to the renewal time. The listener
// therefore remembers its parent and, where /proc shows it, the parent's
// parent, and counts a change of either (the orphan is adopted by another
// process) as the host gone.
type parentWatch struct {
	parent, grandparent int
}

func newParentWatch() parentWatch {
	p := os.Getppid()
	return parentWatch{parent: p, grandparent: ppidOf(p)}
}

// gone reports whether the parent or the grandparent changed.
func (w parentWatch) gone() bool {
	if os.Getppid() != w.parent {
		return true
	}
	return w.grandparent > 0 && ppidOf(w.parent) != w.grandparent
}

// ppidOf returns the parent of pid from /proc, or 0 when unknown.
func ppidOf(pid int) int {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// The command name (field 2) is in parentheses and may hold spaces; the
	// fields after the last ')' are state, then ppid.
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 2 {
		return 0
	}
	n, _ := strconv.Atoi(f[1])
	return n
}
