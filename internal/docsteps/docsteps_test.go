package docsteps

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// The walkthroughs, relative to this package.
const (
	// gettingStarted follows the README's "Getting started", DEPLOY.md and
	// OPERATIONS.md.
	gettingStarted = "testdata/getting-started.sh"
	// performance follows PERFORMANCE.md.
	performance = "testdata/performance.sh"
)

// roleEnv makes the test binary act as the exchange the script calls (see
// TestMain) instead of running the tests.
const roleEnv = "INTERLINK_DOCSTEPS_ROLE"

// netnsEnv makes the test binary, started in a network namespace of its
// own, bring up the loopback there and then run the walkthrough script it
// names with bash (see runScript).
const netnsEnv = "INTERLINK_DOCSTEPS_NETNS_SCRIPT"

func TestMain(m *testing.M) {
	if script := os.Getenv(netnsEnv); script != "" {
		os.Exit(netnsMain(script))
	}
	if os.Getenv(roleEnv) == "exchange" {
		os.Exit(exchangeMain())
	}
	os.Exit(m.Run())
}

// documents are the files whose command blocks the walkthroughs follow,
// with the section of each that counts ("" for the whole file). Every
// block of commands in them is run by a walkthrough script, or marked as
// one the walkthrough cannot run (see markerPrefix).
var documents = []struct{ path, section string }{
	{"../../README.md", "## Getting started"},
	{"../../docs/DEPLOY.md", ""},
	{"../../docs/OPERATIONS.md", ""},
	{"../../docs/PERFORMANCE.md", ""},
	{"../../SECURITY.md", ""},
}

// scripts are the walkthroughs, relative to this package.
var scripts = []string{gettingStarted, performance}

// scriptLines returns the trimmed command lines of the walkthrough
// scripts, without comments and without a trailing "&": a server the
// documents start in a terminal of its own runs in the background there.
func scriptLines(t *testing.T) []string {
	t.Helper()
	var lines []string
	for _, path := range scripts {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for line := range strings.Lines(string(data)) {
			if c := stripComment(line); c != "" {
				lines = append(lines, strings.TrimSpace(strings.TrimSuffix(c, "&")))
			}
		}
	}
	return lines
}

func TestDocumentedCommandsAreInTheWalkthrough(t *testing.T) {
	run := scriptLines(t)
	var cmds, notRun int
	for _, doc := range documents {
		for _, b := range documentBlocks(t, doc.path, doc.section) {
			if b.notRun != "" {
				notRun++
				continue
			}
			for _, c := range b.cmds {
				cmds++
				if !slices.ContainsFunc(run, func(line string) bool { return b.runAs(c, line) }) {
					t.Errorf("%s shows a command no walkthrough runs as written:\n\t%s\n"+
						"add it to one of %v, or mark the block \"<!-- walkthrough: not run: REASON -->\"", b.where(), c, scripts)
				}
			}
		}
	}
	t.Logf("%d documented commands checked; %d blocks marked as not run", cmds, notRun)
}

// The markers are read strictly: a marker that is malformed, gives no
// reason, stands above no block of commands, or names a flag that does
// more than shorten a run is an error. Blocks of output and files hold no
// commands; a transcript's commands are its "$ " lines.
func TestWalkthroughMarkers(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		wantErr    bool
		notRun     string
		shortened  []string
		cmds       []string
	}{
		{name: "unmarked", text: "```sh\necho one   # a comment\n# only a comment\necho \\\n two\n```\n",
			cmds: []string{"echo one", "echo two"}},
		{name: "not run", text: "<!-- walkthrough: not run: needs systemd -->\n```sh\nsystemctl --user daemon-reload\n```\n",
			notRun: "needs systemd", cmds: []string{"systemctl --user daemon-reload"}},
		{name: "shortened", text: "<!-- walkthrough: shortened with --duration 1s -benchtime=1x -->\n```sh\ninterlink-bus bench\n```\n",
			shortened: []string{"duration=1s", "benchtime=1x"}, cmds: []string{"interlink-bus bench"}},
		{name: "transcript", text: "```\n$ interlink-mcp doctor\nOK    key file\n```\n", cmds: []string{"interlink-mcp doctor"}},
		{name: "output and a file", text: "```\nroundtrip  ops=1\n```\n```yaml\na: b\n```\n"},
		{name: "no reason", text: "<!-- walkthrough: not run: -->\n```sh\nls\n```\n", wantErr: true},
		{name: "unknown kind", text: "<!-- walkthrough: skip -->\n```sh\nls\n```\n", wantErr: true},
		{name: "a flag that changes the run", text: "<!-- walkthrough: shortened with --mode floor -->\n```sh\nls\n```\n", wantErr: true},
		{name: "a flag without its value", text: "<!-- walkthrough: shortened with --duration -->\n```sh\nls\n```\n", wantErr: true},
		{name: "a marker away from its block", text: "<!-- walkthrough: not run: needs systemd -->\n\n```sh\nls\n```\n", wantErr: true},
		{name: "a marker above output", text: "<!-- walkthrough: not run: output -->\n```\nops=1\n```\n", wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			blocks, errs := parseBlocks("DOC.md", tc.text, 1)
			if (len(errs) > 0) != tc.wantErr {
				t.Fatalf("errors %v, want some: %v", errs, tc.wantErr)
			}
			if tc.wantErr {
				return
			}
			var notRun string
			var shortened, cmds []string
			for _, b := range blocks {
				notRun, shortened = b.notRun, b.shortened
				cmds = append(cmds, b.cmds...)
			}
			if notRun != tc.notRun || !slices.Equal(shortened, tc.shortened) || !slices.Equal(cmds, tc.cmds) {
				t.Errorf("not run %q, shortened %q, commands %q; want %q, %q, %q", notRun, shortened, cmds, tc.notRun, tc.shortened, tc.cmds)
			}
		})
	}
}

// A documented command counts as run when a script runs it as written or,
// in a "shortened with" block, with some of the marker's flags appended:
// no other flag, and no flag of an unmarked block.
func TestShortenedCommandsTakeOnlyTheMarkersFlags(t *testing.T) {
	const cmd = "interlink-bus bench --mode wake --duration 5s"
	marked := block{shortened: []string{"duration=300ms", "idle=10", "benchtime=1x"}}
	for _, tc := range []struct {
		b    block
		run  string
		want bool
	}{
		{marked, cmd, true},
		{marked, cmd + " --duration 300ms", true},
		{marked, cmd + " --duration=300ms --idle 10", true},
		{marked, cmd + " --duration 1s", false},
		{marked, cmd + " --mode floor", false},
		{marked, cmd + " --duration 300ms --keepalive", false},
		{marked, cmd + "x --duration 300ms", false},
		{marked, cmd + " && rm -rf x", false},
		{block{}, cmd + " --duration 300ms", false},
		{block{}, cmd, true},
	} {
		if got := tc.b.runAs(cmd, tc.run); got != tc.want {
			t.Errorf("marker %q, script line %q: counted as run %v, want %v", tc.b.shortened, tc.run, got, tc.want)
		}
	}
}

func TestGettingStartedAsWritten(t *testing.T) {
	root := walkthroughReady(t, "installs both binaries")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	out := runScript(t, gettingStarted, root, freshEnv(t, t.TempDir(), self), 9440)
	for _, want := range []string{
		`{"status":"ok"}`,
		"exchange: sent to self, session two",
		"exchange: the Stop hook woke session two",
		"exchange: session two acknowledged: Acknowledged 1",
		// OPERATIONS.md's doctor transcript: a session that is not running
		// fails the roster check, with the fix the document shows.
		"FAIL  roster of http://127.0.0.1:9440",
		"session 3b9d2f4e is not on it, so peers cannot find it",
		"fix: is its server running?",
		"no server of session 3b9d2f4e runs on this machine",
		"doctor exit status 1",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the walkthrough output lacks %q", want)
		}
	}
}

func TestPerformanceAsWritten(t *testing.T) {
	root := walkthroughReady(t, "runs every benchmark of PERFORMANCE.md for a moment")
	// The commands write where they run (cpu.out, ./interlink-bus,
	// ./idle.db), so they run in a copy of the module, not in the source.
	dir := moduleCopy(t, root)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	out := runScript(t, performance, dir, freshEnv(t, t.TempDir(), self), 9440, 9441, 9442, 9443, 4222)
	if m := regexp.MustCompile(`(?m)^.*\berrors=[1-9].*$`).FindString(out); m != "" {
		t.Errorf("a benchmark reported errors:\n%s", m)
	}
	for _, want := range []string{
		"roundtrip  ops=", "wirefloor  ops=", "boltfloor  ops=", "pipeline   ops=", "agentsend  ops=",
		"wake       ops=", "fill       ops=", "full       ops=", "VmRSS:",
		"BenchmarkHandlers", "BenchmarkRoundTrip/tls+signed", "BenchmarkBoltReopen", "BenchmarkReceive4096", "BenchmarkRetain4000", "BenchmarkReserveQuiet4096",
		"BenchmarkSealedAndPlainToCommit", "BenchmarkOpenMessage/1KiB",
		"\nsigned+sealed ops=", "# signed+sealed/roundtrip ops/s: ", "\ntls        ops=", "# tls/roundtrip ops/s: ",
		"BenchmarkSignedSealedAndPlainToCommit",
		`target="two in-process buses, nats store`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the walkthrough output lacks %q", want)
		}
	}
}

// walkthroughReady skips the test where a walkthrough cannot run (with
// -short, off Linux, without bash, curl or go) and returns the
// repository's root.
func walkthroughReady(t *testing.T, what string) string {
	t.Helper()
	if testing.Short() {
		t.Skipf("%s; skipped with -short", what)
	}
	if runtime.GOOS != "linux" {
		t.Skip("the walkthrough is a Linux shell session")
	}
	for _, tool := range []string{"bash", "curl", "go"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("docsteps: skipping: %s is not on PATH", tool)
		}
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// runScript runs the walkthrough script from dir with env, in a process
// group of its own that is killed when the test ends, and returns its
// output. A failing step, or a script that ends before its last step,
// fails the test.
//
// The documents name fixed ports on 127.0.0.1, so the script runs in a
// network namespace of its own where they are free (see isolate). Where
// the system allows no such namespace it shares the machine's network:
// then each of ports must be free first, and the test fails with a line
// naming what holds one that stays taken.
func runScript(t *testing.T, script, dir string, env []string, ports ...int) string {
	t.Helper()
	path, err := filepath.Abs(script)
	if err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	newCmd := func(name string, arg ...string) *exec.Cmd {
		cmd := exec.CommandContext(t.Context(), name, arg...)
		cmd.Dir = dir
		cmd.Env = env
		cmd.WaitDelay = 5 * time.Second
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		ownGroup(cmd)
		t.Cleanup(func() { killGroup(cmd) })
		return cmd
	}
	cmd := newCmd(self)
	cmd.Env = append(slices.Clip(env), netnsEnv+"="+path)
	isolate(cmd)
	if err := cmd.Start(); err != nil {
		t.Logf("docsteps: no network namespace of its own (%v); the walkthrough shares this machine's ports", err)
		for _, port := range ports {
			waitForPort(t, port)
		}
		cmd = newCmd("bash", path)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
	}
	err = cmd.Wait()
	out := cmd.Stdout.(*bytes.Buffer).String()
	t.Logf("walkthrough output:\n%s", out)
	if err != nil {
		t.Fatalf("the walkthrough %s failed: %v", script, err)
	}
	if !strings.Contains(out, "== all documented steps ran") {
		t.Fatalf("the walkthrough %s ended before its last step", script)
	}
	return out
}

// moduleCopy copies the module at root (go.mod, go.sum, cmd, internal and
// testdata) to a folder named after root in the system's temporary folder,
// removed when the test ends. Its name stays the same from run to run, so
// that go reuses what it built there before.
func moduleCopy(t *testing.T, root string) string {
	t.Helper()
	sum := sha256.Sum256([]byte(root))
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("interlink-walkthrough-%x", sum[:6]))
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	for _, name := range []string{"cmd", "internal", "testdata"} {
		if err := os.CopyFS(filepath.Join(dir, name), os.DirFS(filepath.Join(root, name))); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"go.mod", "go.sum"} {
		data, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// freshEnv is the environment of a new user: HOME is home, nothing of
// interlink, Claude or XDG is set, and PATH is this one's, for go, curl and
// systemd's tools. Go keeps this run's caches so that nothing is
// downloaded, and never fetches a toolchain or a module.
func freshEnv(t *testing.T, home, self string) []string {
	t.Helper()
	goEnv := func(name string) string {
		out, err := exec.Command("go", "env", name).Output()
		if err != nil {
			t.Fatalf("go env %s: %v", name, err)
		}
		return strings.TrimSpace(string(out))
	}
	env := []string{
		"HOME=" + home,
		"PATH=" + os.Getenv("PATH"),
		"GOCACHE=" + goEnv("GOCACHE"),
		"GOMODCACHE=" + goEnv("GOMODCACHE"),
		"GOFLAGS=" + os.Getenv("GOFLAGS"),
		"GOTOOLCHAIN=local",
		"GOPROXY=off",
		"DOCSTEPS_EXCHANGE=" + self,
		roleEnv + "=exchange",
	}
	if tmp := os.Getenv("TMPDIR"); tmp != "" {
		env = append(env, "TMPDIR="+tmp)
	}
	return env
}

// errNoPlugin is returned by the exchange when setup claude wrote nothing.
var errNoPlugin = errors.New("no plugin: run 'interlink-mcp setup claude' first")

// pluginDir is where setup claude writes the plugin by default.
func pluginDir() (string, error) {
	home, err := os.UserHomeDir()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(home, ".config", "interlink", "claude-plugin")
	if _, err := os.Stat(filepath.Join(dir, ".mcp.json")); err != nil {
		return "", errNoPlugin
	}
	return dir, nil
}
