package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/interlink-go/interlink/internal/cmdline"
	"github.com/interlink-go/interlink/internal/version"
)

const progName = "interlink-bus"

// Exit statuses. Usage errors get their own status so that scripts and
// service managers can tell a mistyped command line from a bus that failed.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
)

// usage is printed for --help.
const usage = `interlink-bus is the HTTP broker that relays signed messages between
interlink agents. It stores and forwards them; checking signatures is up to
the agents.

Usage:
    interlink-bus [options]          serve until SIGINT or SIGTERM
    interlink-bus bench [options]    generate load against a bus
    interlink-bus unit [options]     print a systemd user unit for this binary
    interlink-bus --version
    interlink-bus --help

Options:
    --addr IP:PORT     where to listen; an IP address, not a host name (IPv6
                       as [::1]:9440). Env INTERLINK_ADDR; default
                       127.0.0.1:9440
    --db PATH          keep the queues in this bbolt file, created with mode
                       0600 if missing (an existing one is set to 0600); its
                       folder must exist. A damaged file stops the bus. Env
                       INTERLINK_DB; default: in memory, lost on restart
    --nats URL         keep the queues and the roster in NATS JetStream
                       instead, so that several buses serve the same queues:
                       nats://HOST:4222, several servers of one cluster
                       separated by commas, a user and password in the URL
                       if the server wants them. Not with --db. Env
                       INTERLINK_NATS
    --nats-stream NAME the stream; the roster is in the key-value bucket
                       NAME_ROSTER. Env INTERLINK_NATS_STREAM; default
                       INTERLINK
    --nats-replicas N  how many servers keep the stream and the roster, 1
                       to 5. Env INTERLINK_NATS_REPLICAS; default 1
    --nats-creds FILE  connect with this NATS credentials file. Env
                       INTERLINK_NATS_CREDS
    --queue-cap N      messages kept per route; a full queue drops its oldest
                       message. Env INTERLINK_QUEUE_CAP; default 1024; 0
                       means 1
    --queue-bytes SIZE bytes kept per route, counting each message with its
                       key and 176 bytes of bookkeeping, such as 8MiB; a
                       full queue drops its oldest messages. At least the
                       largest message, a little over 2MiB. Not with
                       --nats. Env INTERLINK_QUEUE_BYTES; default 8MiB
    --total-bytes SIZE bytes kept in all queues together; a send beyond it
                       is refused with 507 and sent again by the agent
                       later. With --nats, the stream's max_bytes. Env
                       INTERLINK_TOTAL_BYTES; default 128MiB
    --ack-delay D      with --db: how long acknowledgements may wait to share
                       the commit of a later send before they are committed
                       on their own. A send answers only once it is on disk;
                       an acknowledgement answers at once, and a crash can
                       bring back the messages acknowledged in the last D
                       (agents drop them as replays). 0 commits each at once.
                       Env INTERLINK_ACK_DELAY; default 100ms; at most 1m
    --tls-cert FILE    serve HTTPS with this PEM certificate chain; the
                       files are read again when they change, so a renewed
                       certificate needs no restart. Env INTERLINK_TLS_CERT
    --tls-key FILE     the certificate's private key. Env INTERLINK_TLS_KEY
    --auth MODE        request signatures: optional verifies those present
                       and serves unsigned requests as the original bus
                       does; required lets only a route's key read,
                       acknowledge or unregister it and needs every send
                       and announcement signed by its sender; off ignores
                       them. Env INTERLINK_AUTH; default optional
    --authority NAMES  host names, comma-separated, that clients may have
                       signed besides the Host the bus receives: those of
                       a reverse proxy that rewrites Host. Env
                       INTERLINK_AUTHORITY
    --path-prefix LIST path prefixes, comma-separated, that a reverse proxy
                       strips before it forwards a request, such as
                       /interlink. Env INTERLINK_PATH_PREFIX
    --log-level LEVEL  debug, info, warn or error. Env INTERLINK_LOG_LEVEL;
                       default info
    -h, --help         show this help
    --version          print the version

A flag wins over its environment variable; a variable set to the empty
string counts as unset. Logs go to stderr.

Without --auth required anyone who can reach the port can read, acknowledge
and flood every queue: keep such a bus on loopback or on a trusted private
network. A bus open to others needs --auth required and TLS (see
docs/DEPLOY.md, "An open relay").

Run 'interlink-bus bench --help' for the load generator and
'interlink-bus unit --help' for the systemd unit.
`

// helpHint points at the usage text after a usage error.
const helpHint = "run 'interlink-bus --help' for the options"

// cli holds what the commands need from the process, so that tests can run
// them with their own streams and environment.
type cli struct {
	stdout io.Writer // the command's intended output only
	stderr io.Writer // logs, errors and hints
	getenv func(string) string
}

// run runs interlink-bus with the command-line arguments args (without the
// program name) and returns the exit status. It serves until ctx ends.
func run(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) int {
	c := &cli{stdout: stdout, stderr: stderr, getenv: os.Getenv}
	return c.run(ctx, args)
}

func (c *cli) run(ctx context.Context, args []string) int {
	if len(args) > 0 {
		switch name, rest := args[0], args[1:]; name {
		case "bench":
			return c.bench(ctx, rest)
		case "unit":
			return c.unit(rest)
		case "help":
			return c.help(rest)
		case "-version", "--version":
			if len(rest) > 0 {
				return c.fail(exitUsage, fmt.Sprintf("unexpected argument %q after %s", rest[0], name), helpHint)
			}
			fmt.Fprintf(c.stdout, "%s %s\n", progName, version.String())
			return exitOK
		}
	}
	return c.serve(ctx, args)
}

// help prints the usage text, or that of the command named in args.
func (c *cli) help(args []string) int {
	switch {
	case len(args) == 0:
		fmt.Fprint(c.stdout, usage)
		return exitOK
	case len(args) == 1 && args[0] == "bench":
		fmt.Fprint(c.stdout, benchUsage)
		return exitOK
	case len(args) == 1 && args[0] == "unit":
		fmt.Fprint(c.stdout, unitUsage)
		return exitOK
	case len(args) == 1:
		return c.fail(exitUsage, fmt.Sprintf("no help for %q", args[0]), helpHint)
	default:
		return c.fail(exitUsage, fmt.Sprintf("unexpected argument %q", args[1]), helpHint)
	}
}

// fail writes msg as one line prefixed with the program name, then each hint
// on a line of its own, all to stderr, and returns code for run to exit with.
func (c *cli) fail(code int, msg string, hints ...string) int {
	return cmdline.Fail(c.stderr, progName, code, msg, hints...)
}

// setting resolves one option: an explicit non-empty flag value wins, then
// a non-empty environment variable, then def. It also returns where the
// value came from, for error messages.
func (c *cli) setting(flagValue, flagName, envName, def string) (value, source string) {
	return cmdline.Setting(c.getenv, flagValue, flagName, envName, def)
}
