package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/template"

	"github.com/interlink-go/interlink/internal/connlimit"
	"github.com/interlink-go/interlink/internal/store"
	natsstore "github.com/interlink-go/interlink/internal/store/nats"
)

// unitUsage is printed for "interlink-bus unit --help".
const unitUsage = `Usage: interlink-bus unit [--addr IP:PORT] [--db PATH | --nats URL [NATS options]]
                          [--queue-cap N] [--ack-delay D] [--bin PATH]

Prints a systemd user unit that runs this interlink-bus, named by its
absolute path, so that the unit does not depend on where it was installed:

    mkdir -p ~/.config/systemd/user
    interlink-bus unit > ~/.config/systemd/user/interlink-bus.service

Options:
    --addr IP:PORT   the address the bus listens on; default 127.0.0.1:9440
    --db PATH        the database file; default %S/interlink/bus.db, which
                     systemd expands to ~/.local/state/interlink/bus.db
    --nats URL       keep the queues and the roster in NATS JetStream instead
                     of --db; the URL may not hold a user, password or token,
                     which the unit and the process list would show: use
                     --nats-creds
    --nats-stream NAME, --nats-replicas N, --nats-creds FILE
                     as for the bus; the credentials file by its absolute
                     path
    --queue-cap N    messages kept per route; default: the bus's own (1024)
    --ack-delay D    with --db: how long acknowledgements may wait for a
                     commit; default: the bus's own (100ms)
    --bin PATH       the interlink-bus to run; default: this program
    -h, --help       show this help

Environment variables are not read: the unit holds what it was written with.
Write it again after moving the binary.
`

// unitTemplate is the unit file. The header repeats the install steps so
// that a unit found on disk explains itself.
var unitTemplate = template.Must(template.New("unit").Parse(`# systemd user unit for interlink-bus, the message broker, written by
# "interlink-bus unit". Write your own rather than copying one: ExecStart
# names the binary by its absolute path.
#
# Install, as the user who runs the agents:
#
#   mkdir -p ~/.config/systemd/user
#   interlink-bus unit > ~/.config/systemd/user/interlink-bus.service
#   systemctl --user daemon-reload
#   systemctl --user enable --now interlink-bus
#   loginctl enable-linger "$USER"   # start at boot, without a login
#
# Check it with "systemctl --user status interlink-bus" and
# "journalctl --user -u interlink-bus". After moving the binary, or to
# change the options, write the unit again and run daemon-reload.
#
# StateDirectory creates %S/interlink (normally ~/.local/state/interlink)
# before the bus starts. With the default --db the queues live in bus.db
# there and survive restarts; with --nats they live in NATS JetStream.
# Do not point --db at a bus.redb left by the original broker: this one
# cannot read it.
#
# LimitNOFILE bounds the files the bus may open, and so its connections:
# it keeps 64 for itself and takes at most {{.MaxConns}} connections at
# once, each costing it 16 to 40 KiB of memory while it lasts. When all are
# taken, a client holding fewer takes the place of the oldest connection
# of the client holding the most, so one client with many connections
# cannot lock the others out. Raise it for a bus with more sessions; the
# bus logs its limit when it starts.
#
# Several machines: without --auth required and TLS anyone who reaches the
# port can read every queue (docs/DEPLOY.md, "An open relay"), so listen
# only on a private network such as a tailnet, with that interface's IP
# address written out (interlink-bus unit --addr 100.101.102.103:9440),
# and allow the port only from your own machines with a firewall. See
# docs/DEPLOY.md.
#
# The unit waits for no network target: network-online.target belongs to
# the system's manager, and a user's manager, which runs this unit, has
# none to wait for. Until the address exists (a tailnet interface coming
# up after boot), the bus fails to listen and exits; Restart=always starts
# it again every two seconds, and StartLimitIntervalSec=0 keeps systemd
# from giving up after a few tries.

[Unit]
Description=interlink message bus
StartLimitIntervalSec=0

[Service]
StateDirectory=interlink
ExecStart={{.ExecStart}}
Restart=always
RestartSec=2
LimitNOFILE={{.OpenFiles}}

[Install]
WantedBy=default.target
`))

// unitOpenFiles is the open-file limit of the unit, which sets how many
// connections the bus takes at once ([connlimit.Capacity]).
// Without it the bus would get systemd's hard limit, often 524,288: as
// many connections as an attacker cares to open, each costing memory.
// 8,192 is many times what the sessions of one person need.
const unitOpenFiles = 8192

// defaultUnitDB is the database path of a unit written without --db. %S is
// systemd's state directory, ~/.local/state for a user unit.
const defaultUnitDB = "%S/interlink/bus.db"

// unit prints a systemd user unit for this binary.
func (c *cli) unit(args []string) int {
	fset := flag.NewFlagSet(progName+" unit", flag.ContinueOnError)
	fset.SetOutput(io.Discard)
	fset.Usage = func() {}
	var addr, db, queueCap, ackDelay, bin string
	var nf natsFlags
	fset.StringVar(&addr, "addr", defaultAddr, "")
	fset.StringVar(&db, "db", "", "")
	nf.register(fset)
	fset.StringVar(&queueCap, "queue-cap", "", "")
	fset.StringVar(&ackDelay, "ack-delay", "", "")
	fset.StringVar(&bin, "bin", "", "")
	if err := fset.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(c.stdout, unitUsage)
			return exitOK
		}
		return c.fail(exitUsage, "unit: "+err.Error(), unitHint)
	}
	if fset.NArg() > 0 {
		return c.fail(exitUsage, fmt.Sprintf("unit: unexpected argument %q", fset.Arg(0)), unitHint)
	}
	ap, err := parseAddr(addr)
	if err != nil {
		return c.fail(exitUsage, fmt.Sprintf("unit: --addr %q: %v", addr, err),
			"give an IP address and port such as 127.0.0.1:9440; systemd does not run shell substitutions")
	}
	cmd := []string{"", "--addr", ap.String()}
	switch {
	case nf.url != "":
		natsArgs, code, ok := c.unitNATS(nf, db)
		if !ok {
			return code
		}
		cmd = append(cmd, natsArgs...)
	case db == "":
		cmd = append(cmd, "--db", defaultUnitDB) // a specifier: not escaped
	default:
		if !filepath.IsAbs(db) {
			return c.fail(exitUsage, fmt.Sprintf("unit: --db %q: not an absolute path", db),
				"systemd starts the bus in another folder; give the full path")
		}
		cmd = append(cmd, "--db", unitArg(db))
	}
	if nf.url == "" && (nf.stream != "" || nf.replicas != "" || nf.creds != "") {
		return c.fail(exitUsage, "unit: --nats-stream, --nats-replicas and --nats-creds apply only with --nats", unitHint)
	}
	if queueCap != "" {
		if _, err := parseQueueCap(queueCap); err != nil {
			return c.fail(exitUsage, fmt.Sprintf("unit: --queue-cap %q: %v", queueCap, err), unitHint)
		}
		cmd = append(cmd, "--queue-cap", queueCap)
	}
	if ackDelay != "" {
		if nf.url != "" {
			return c.fail(exitUsage, "unit: --ack-delay applies only to a --db bus, not with --nats", unitHint)
		}
		d, err := parseAckDelay(ackDelay)
		if err != nil {
			return c.fail(exitUsage, fmt.Sprintf("unit: --ack-delay %q: %v", ackDelay, err), unitHint)
		}
		cmd = append(cmd, "--ack-delay", d.String())
	}
	if bin == "" {
		if bin, err = selfPath(); err != nil {
			return c.fail(exitError, fmt.Sprintf("unit: cannot tell where this program is: %v", err),
				"name it with --bin PATH")
		}
	}
	if !filepath.IsAbs(bin) {
		return c.fail(exitUsage, fmt.Sprintf("unit: --bin %q: not an absolute path", bin), unitHint)
	}
	cmd[0] = unitArg(bin)
	data := struct {
		ExecStart           string
		OpenFiles, MaxConns int
	}{strings.Join(cmd, " "), unitOpenFiles, connlimit.Capacity(unitOpenFiles)}
	if err := unitTemplate.Execute(c.stdout, data); err != nil {
		return c.fail(exitError, fmt.Sprintf("unit: %v", err))
	}
	return exitOK
}

// unitNATS checks the NATS options of a unit and returns them as words of
// its command line.
func (c *cli) unitNATS(nf natsFlags, db string) (args []string, code int, ok bool) {
	fail := func(msg string, hints ...string) ([]string, int, bool) {
		return nil, c.fail(exitUsage, "unit: "+msg, hints...), false
	}
	if db != "" {
		return fail("--db and --nats both given: the queues live either in a bbolt file or in NATS", unitHint)
	}
	if hasCredentials(nf.url) {
		return fail("--nats holds credentials, which the unit file and the process list would show",
			"connect with a credentials file (--nats-creds FILE) instead")
	}
	args = []string{"--nats", unitArg(nf.url)}
	if nf.stream != "" {
		if err := natsstore.CheckStreamName(nf.stream); err != nil {
			return fail(fmt.Sprintf("--nats-stream %q: %s", nf.stream, store.Reason(err)), unitHint)
		}
		args = append(args, "--nats-stream", nf.stream)
	}
	if nf.replicas != "" {
		if n, err := strconv.Atoi(nf.replicas); err != nil || n < 1 || n > 5 {
			return fail(fmt.Sprintf("--nats-replicas %q: want 1 to 5 servers", nf.replicas), unitHint)
		}
		args = append(args, "--nats-replicas", nf.replicas)
	}
	if nf.creds != "" {
		if !filepath.IsAbs(nf.creds) {
			return fail(fmt.Sprintf("--nats-creds %q: not an absolute path", nf.creds),
				"systemd starts the bus in another folder; give the full path")
		}
		args = append(args, "--nats-creds", unitArg(nf.creds))
	}
	return args, exitOK, true
}

// unitHint points at the unit command's usage after a usage error.
const unitHint = "run 'interlink-bus unit --help' for the options"

// selfPath returns the absolute path of the running executable, with
// symbolic links resolved so that the unit keeps working when a link to
// it is replaced.
func selfPath() (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", err
	}
	return filepath.EvalSymlinks(exe)
}

// unitArg writes s as one word of a systemd command line: specifier and
// variable characters are doubled so that systemd takes them literally, and
// a word with white space, quotes or backslashes is put in double quotes.
func unitArg(s string) string {
	s = strings.NewReplacer("%", "%%", "$", "$$").Replace(s)
	if !strings.ContainsAny(s, " \t\"'\\;") {
		return s
	}
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}
