//go:build unix

package main

import (
	"fmt"
	"syscall"
)

// execClaude replaces this process with argv; it returns only on failure.
func execClaude(c *cli, argv, env []string) int {
	err := syscall.Exec(argv[0], argv, env)
	return c.fail(exitError, fmt.Sprintf("channels: run %s: %v", argv[0], err))
}
