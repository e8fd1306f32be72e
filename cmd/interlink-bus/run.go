package main

import (
	"context"
	"fmt"
	"io"

	"github.com/interlink-go/interlink/internal/version"
)

// usage is printed for --help.
const usage = `interlink-bus is the HTTP broker that relays signed messages between
interlink agents. It stores and forwards them; checking signatures is up to
the agents.

Usage:
    interlink-bus --version   print the version
    interlink-bus --help      show this help

Serving is not available in this build yet: only --help and --version work.
`

// run runs interlink-bus with the command-line arguments args (without the
// program name) and returns the exit status.
func run(_ context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 1 {
		switch args[0] {
		case "-h", "-help", "--help", "help":
			fmt.Fprint(stdout, usage)
			return 0
		case "-version", "--version":
			fmt.Fprintf(stdout, "interlink-bus %s\n", version.String())
			return 0
		}
	}
	fmt.Fprintln(stderr, "interlink-bus: the broker is not available in this build")
	return 1
}
