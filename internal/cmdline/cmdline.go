// Package cmdline holds the command-line conventions both binaries share:
// how a program starts and stops on signals, how it reports an error, and
// how a setting is resolved from a flag, an environment variable and a
// default.
//
// Errors are one line on stderr prefixed with the program name, optionally
// followed by hint lines; the exit status is 1 for a failure and 2 for a
// usage error. Standard output carries only a command's intended output.
package cmdline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

// Exit statuses.
const (
	ExitOK    = 0
	ExitError = 1
	ExitUsage = 2
)

// RunFunc is the testable body of a program: it runs with the arguments
// after the program name and returns the exit status.
type RunFunc func(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int

// Main runs run with the process's arguments and streams, with a context
// that ends on SIGINT or SIGTERM, and exits with its status.
func Main(run RunFunc) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// Fail writes msg as one line prefixed with prog, then each hint on a line
// of its own, to stderr, and returns code for the caller to exit with.
func Fail(stderr io.Writer, prog string, code int, msg string, hints ...string) int {
	fmt.Fprintf(stderr, "%s: %s\n", prog, msg)
	for _, h := range hints {
		fmt.Fprintf(stderr, "%s: hint: %s\n", prog, h)
	}
	return code
}

// Setting resolves one option: an explicit non-empty flag value wins, then
// a non-empty environment variable read with getenv, then def. An
// environment variable set to the empty string counts as unset. It also
// returns where the value came from (flagName or envName), for error
// messages.
func Setting(getenv func(string) string, flagValue, flagName, envName, def string) (value, source string) {
	if flagValue != "" {
		return flagValue, flagName
	}
	if v := getenv(envName); v != "" {
		return v, envName
	}
	return def, flagName
}

// ParseLogLevel parses one of the level names debug, info, warn and error,
// in any case.
func ParseLogLevel(s string) (slog.Level, error) {
	switch strings.ToLower(s) {
	case "debug":
		return slog.LevelDebug, nil
	case "info":
		return slog.LevelInfo, nil
	case "warn":
		return slog.LevelWarn, nil
	case "error":
		return slog.LevelError, nil
	}
	return 0, errors.New("want debug, info, warn or error")
}
