package docsteps

import (
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"
)

// script is the walkthrough, relative to this package.
const script = "testdata/getting-started.sh"

// roleEnv makes the test binary act as the exchange the script calls (see
// TestMain) instead of running the tests.
const roleEnv = "INTERLINK_DOCSTEPS_ROLE"

func TestMain(m *testing.M) {
	if os.Getenv(roleEnv) == "exchange" {
		os.Exit(exchangeMain())
	}
	os.Exit(m.Run())
}

// documents are the files whose shell blocks the walkthrough follows, with
// the section of each that counts ("" for the whole file).
var documents = []struct{ path, section string }{
	{"../../README.md", "## Getting started"},
	{"../../docs/DEPLOY.md", ""},
}

// documentedCommands returns the command lines of the ```sh blocks in the
// given section of the Markdown file at path, without trailing comments.
func documentedCommands(t *testing.T, path, section string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	if section != "" {
		i := strings.Index(text, "\n"+section+"\n")
		if i < 0 {
			t.Fatalf("%s has no section %q", path, section)
		}
		text = text[i+1+len(section):]
		if j := strings.Index(text, "\n## "); j >= 0 {
			text = text[:j]
		}
	}
	var cmds []string
	in := false
	for line := range strings.Lines(text) {
		line = strings.TrimRight(line, "\n")
		switch {
		case !in && strings.HasPrefix(line, "```sh"):
			in = true
		case in && strings.HasPrefix(line, "```"):
			in = false
		case in:
			if c := stripComment(line); c != "" {
				cmds = append(cmds, c)
			}
		}
	}
	return cmds
}

// trailingComment matches a shell comment after a command: white space,
// then # to the end of the line.
var trailingComment = regexp.MustCompile(`\s+#.*$`)

// stripComment returns a shell line without its comment and surrounding
// blanks; a line that is only a comment gives "".
func stripComment(line string) string {
	line = strings.TrimSpace(line)
	if strings.HasPrefix(line, "#") {
		return ""
	}
	return strings.TrimSpace(trailingComment.ReplaceAllString(line, ""))
}

// scriptSteps returns the trimmed command lines of the walkthrough, without
// a trailing "&", and the commands it lists as not run.
func scriptSteps(t *testing.T) (run, notRun map[string]bool) {
	t.Helper()
	data, err := os.ReadFile(script)
	if err != nil {
		t.Fatal(err)
	}
	run, notRun = map[string]bool{}, map[string]bool{}
	for line := range strings.Lines(string(data)) {
		line = strings.TrimSpace(line)
		if c, ok := strings.CutPrefix(line, "# not run: "); ok {
			notRun[c] = true
			continue
		}
		if c := stripComment(line); c != "" {
			// A server the documents start in a terminal of its own runs
			// in the background here.
			run[strings.TrimSpace(strings.TrimSuffix(c, "&"))] = true
		}
	}
	return run, notRun
}

func TestDocumentedCommandsAreInTheWalkthrough(t *testing.T) {
	run, notRun := scriptSteps(t)
	total := 0
	for _, doc := range documents {
		cmds := documentedCommands(t, doc.path, doc.section)
		if len(cmds) == 0 {
			t.Errorf("%s: no shell commands found; has the section moved?", doc.path)
		}
		total += len(cmds)
		for _, c := range cmds {
			if !run[c] && !notRun[c] {
				t.Errorf("%s shows a command the walkthrough does not run as written:\n\t%s\nadd it to %s (or list it as \"# not run: ...\" with the reason)", doc.path, c, script)
			}
		}
	}
	t.Logf("%d documented commands checked", total)
}

func TestGettingStartedAsWritten(t *testing.T) {
	if testing.Short() {
		t.Skip("installs both binaries; skipped with -short")
	}
	if runtime.GOOS != "linux" {
		t.Skip("the walkthrough is a Linux shell session")
	}
	for _, tool := range []string{"bash", "curl", "go"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("docsteps: skipping: %s is not on PATH", tool)
		}
	}
	// The documents use the default port; the walkthrough must too.
	ln, err := net.Listen("tcp", "127.0.0.1:9440")
	if err != nil {
		t.Skipf("docsteps: skipping: the default bus port 127.0.0.1:9440 is taken (%v)", err)
	}
	ln.Close()

	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	cmd := exec.CommandContext(t.Context(), "bash", filepath.Join(root, "internal", "docsteps", script))
	cmd.Dir = root
	cmd.Env = freshEnv(t, home, self)
	cmd.WaitDelay = 5 * time.Second
	ownGroup(cmd)
	t.Cleanup(func() { killGroup(cmd) })
	out, err := cmd.CombinedOutput()
	t.Logf("walkthrough output:\n%s", out)
	if err != nil {
		t.Fatalf("the walkthrough failed: %v", err)
	}
	if !strings.Contains(string(out), "== all documented steps ran") {
		t.Fatal("the walkthrough ended before its last step")
	}
	for _, want := range []string{
		`{"status":"ok"}`,
		"exchange: sent to self, session two",
		"exchange: the Stop hook woke session two",
		"exchange: session two acknowledged: Acknowledged 1",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the walkthrough output lacks %q", want)
		}
	}
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
