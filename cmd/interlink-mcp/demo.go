package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/interlink-go/interlink/internal/cmdline"
	"github.com/interlink-go/interlink/internal/demo"
)

const demoUsage = `Usage: interlink-mcp demo [--log-level LEVEL]

Shows interlink working, on this machine only: it starts an in-memory bus
on a free loopback port, creates two identities (alice and bob) and a
stranger (mallory) in a temporary folder, runs one agent for each of alice
and bob, and drives them through their MCP tools: alice finds bob with
discover and asks to pair, bob accepts, alice asks bob for a review, bob
reads, acknowledges and answers, and a message mallory signs and posts
straight to the bus is dropped by bob's trust gate. Then it stops
everything and removes the folder.

Options:
    --log-level LEVEL  also show the agents' logs at this level on stderr
                       (debug, info, warn, error); default: none
    -h, --help         show this help
`

// runDemo runs the demonstration of [demo.Run] and returns the exit
// status.
func runDemo(c *cli, ctx context.Context, args []string, _ io.Reader) int {
	fset := newFlagSet("demo")
	var logLevel string
	fset.StringVar(&logLevel, "log-level", "", "")
	if code, ok := c.parseFlags(fset, args, demoUsage, "demo: ", exitUsage, helpHint); !ok {
		return code
	}
	var log *slog.Logger
	if logLevel != "" {
		level, err := cmdline.ParseLogLevel(logLevel)
		if err != nil {
			return c.fail(exitUsage, fmt.Sprintf("demo: --log-level %q: %v", logLevel, err), helpHint)
		}
		log = slog.New(slog.NewTextHandler(c.stderr, &slog.HandlerOptions{Level: level}))
	}
	if err := demo.Run(ctx, c.stdout, log); err != nil {
		return c.fail(exitError, "demo: "+err.Error())
	}
	return exitOK
}
