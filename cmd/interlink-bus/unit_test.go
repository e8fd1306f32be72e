package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// runUnit runs "interlink-bus unit args..." in process and returns its
// status and output.
func runUnit(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	c := &cli{stdout: &out, stderr: &errOut, getenv: func(string) string { return "" }}
	code = c.run(t.Context(), append([]string{"unit"}, args...))
	return code, out.String(), errOut.String()
}

// execStart returns the ExecStart line of a unit.
func execStart(t *testing.T, unit string) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^ExecStart=(.*)$`).FindStringSubmatch(unit)
	if m == nil {
		t.Fatalf("no ExecStart line in:\n%s", unit)
	}
	return m[1]
}

// verifyUnit runs systemd-analyze verify on unit, or skips the test where
// systemd's tools are not installed. verify parses the unit and checks that
// the program ExecStart names exists and is executable.
func verifyUnit(t *testing.T, unit string) {
	t.Helper()
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze is not installed; the unit was not verified")
	}
	path := filepath.Join(t.TempDir(), "interlink-bus.service")
	if err := os.WriteFile(path, []byte(unit), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(analyze, "verify", path).CombinedOutput()
	if err != nil {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}
}

func TestUnitRunsThisBinaryByItsAbsolutePath(t *testing.T) {
	code, unit, stderr := runUnit(t)
	if code != exitOK || stderr != "" {
		t.Fatalf("unit: status %d, stderr %q", code, stderr)
	}
	self, err := selfPath()
	if err != nil {
		t.Fatal(err)
	}
	want := unitArg(self) + " --addr 127.0.0.1:9440 --db %S/interlink/bus.db"
	if got := execStart(t, unit); got != want {
		t.Errorf("ExecStart=%s\nwant      %s", got, want)
	}
	if strings.Contains(unit, "go/bin") {
		t.Errorf("the unit assumes ~/go/bin:\n%s", unit)
	}
	verifyUnit(t, unit)
}

func TestUnitQuotesPathsThatSystemdWouldSplitOrExpand(t *testing.T) {
	// A copy of this test binary in a folder whose name has a space and a
	// specifier character: systemd-analyze verify finds it only if the path
	// reached systemd intact.
	dir := filepath.Join(t.TempDir(), "my bus%n")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	self, err := selfPath()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "interlink-bus")
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	code, unit, stderr := runUnit(t, "--bin", bin, "--db", "/srv/q $HOME/bus.db", "--addr", "[::1]:9441", "--queue-cap", "64", "--ack-delay", "250ms")
	if code != exitOK {
		t.Fatalf("unit: status %d, stderr %q", code, stderr)
	}
	want := `"` + strings.ReplaceAll(bin, "%", "%%") + `" --addr [::1]:9441 --db "/srv/q $$HOME/bus.db" --queue-cap 64 --ack-delay 250ms`
	if got := execStart(t, unit); got != want {
		t.Errorf("ExecStart=%s\nwant      %s", got, want)
	}
	verifyUnit(t, unit)
}

func TestUnitRefusesWhatSystemdCannotUse(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"host name", []string{"--addr", "localhost:9440"}, `unit: --addr "localhost:9440": "localhost" is not an IP address`},
		{"shell substitution", []string{"--addr", "$(tailscale ip -4):9440"}, `unit: --addr "$(tailscale ip -4):9440"`},
		{"relative database", []string{"--db", "bus.db"}, `unit: --db "bus.db": not an absolute path`},
		{"relative binary", []string{"--bin", "bin/interlink-bus"}, `unit: --bin "bin/interlink-bus": not an absolute path`},
		{"bad cap", []string{"--queue-cap", "-1"}, `unit: --queue-cap "-1"`},
		{"bad acknowledgement delay", []string{"--ack-delay", "2h"}, `unit: --ack-delay "2h"`},
		{"acknowledgement delay with NATS", []string{"--nats", "nats://127.0.0.1:4222", "--ack-delay", "1s"}, `unit: --ack-delay applies only to a --db bus`},
		{"stray argument", []string{"now"}, `unit: unexpected argument "now"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runUnit(t, tc.args...)
			if code != exitUsage || stdout != "" {
				t.Errorf("status %d, stdout %q; want %d and nothing", code, stdout, exitUsage)
			}
			if !strings.HasPrefix(stderr, "interlink-bus: "+tc.want) || !strings.Contains(stderr, "interlink-bus: hint: ") {
				t.Errorf("stderr %q, want it to start with %q and carry a hint", stderr, tc.want)
			}
		})
	}
}

// contrib/interlink-bus.service is what "interlink-bus unit" writes for a
// binary in /usr/local/bin. Regenerate it with
// INTERLINK_UPDATE_UNIT=1 go test -run TestContribUnitIsGenerated.
func TestContribUnitIsGenerated(t *testing.T) {
	path := filepath.Join("..", "..", "contrib", "interlink-bus.service")
	code, want, stderr := runUnit(t, "--bin", "/usr/local/bin/interlink-bus")
	if code != exitOK {
		t.Fatalf("unit: status %d, stderr %q", code, stderr)
	}
	if os.Getenv("INTERLINK_UPDATE_UNIT") == "1" {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Errorf("%s is out of date; regenerate it (see the test's comment)", path)
	}
}

// TestUnitBoundsTheBusConnections: the unit sets the bus's open-file
// limit, from which the bus takes its connection limit, and says what it
// allows.
func TestUnitBoundsTheBusConnections(t *testing.T) {
	code, unit, stderr := runUnit(t)
	if code != exitOK || stderr != "" {
		t.Fatalf("unit: status %d, stderr %q", code, stderr)
	}
	service := unit[strings.Index(unit, "[Service]"):]
	service = service[:strings.Index(service, "[Install]")]
	if !strings.Contains(service, "\nLimitNOFILE=8192\n") {
		t.Errorf("the [Service] section sets no LimitNOFILE=8192:\n%s", service)
	}
	if !strings.Contains(unit, "at most 8128 connections") {
		t.Errorf("the unit does not say how many connections its limit allows:\n%s", unit)
	}
	verifyUnit(t, unit)
}

// userManagerUnits are the units a user's systemd manager provides for
// others to name (systemd.special(7), "Units managed by the user service
// manager"). network-online.target, network.target and multi-user.target
// are the system manager's: a user unit that names them waits for, or is
// started by, nothing.
var userManagerUnits = []string{
	"default.target", "basic.target", "exit.target", "shutdown.target",
	"sockets.target", "timers.target", "paths.target",
	"graphical-session.target", "graphical-session-pre.target", "xdg-desktop-autostart.target",
	"bluetooth.target", "printer.target", "smartcard.target", "sound.target",
}

// The user unit orders itself after, wants and is wanted by only units a
// user manager has, for the default unit, one for a private address and
// the contrib file. Since it cannot wait for the network, it restarts
// until its address can be listened on, and systemd never gives up on
// it.
func TestUnitNamesOnlyUnitsOfTheUserManager(t *testing.T) {
	dependency := regexp.MustCompile(`(?m)^(After|Before|Wants|Requires|Requisite|BindsTo|PartOf|Upholds|WantedBy|RequiredBy|UpheldBy)=(.*)$`)
	contrib, err := os.ReadFile(filepath.Join("..", "..", "contrib", "interlink-bus.service"))
	if err != nil {
		t.Fatal(err)
	}
	units := map[string]string{"contrib": string(contrib)}
	for name, args := range map[string][]string{"default": nil, "private address": {"--addr", "100.101.102.103:9440"}} {
		code, unit, stderr := runUnit(t, args...)
		if code != exitOK {
			t.Fatalf("unit %v: status %d, stderr %q", args, code, stderr)
		}
		units[name] = unit
	}
	for name, unit := range units {
		for _, m := range dependency.FindAllStringSubmatch(unit, -1) {
			for _, dep := range strings.Fields(m[2]) {
				if !slices.Contains(userManagerUnits, dep) {
					t.Errorf("%s unit: %s=%s names a unit a user manager does not have", name, m[1], dep)
				}
			}
		}
		for _, want := range []string{"Restart=always", "StartLimitIntervalSec=0"} {
			if !regexp.MustCompile(`(?m)^` + want + `$`).MatchString(unit) {
				t.Errorf("%s unit lacks %s", name, want)
			}
		}
	}
}
