//go:build !unix

package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
)

// execClaude runs argv with this process's streams and returns its exit
// status; the platform cannot replace a running process.
func execClaude(c *cli, argv, env []string) int {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		return c.fail(exitError, fmt.Sprintf("channels: run %s: %v", argv[0], err))
	}
	return exitOK
}
