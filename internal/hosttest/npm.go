//go:build hosttest

package hosttest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// npmInstallTimeout bounds one npm install, downloads included.
const npmInstallTimeout = 10 * time.Minute

// npmLogLines is how many lines of a failed npm's output the test log keeps.
const npmLogLines = 20

// installNPM makes sure that pkg@version is installed with npm under
// <repo root>/.hosttools/ and returns the folder that holds its
// node_modules. A complete earlier install is reused. A new one goes into a
// temporary sibling folder that is renamed into place only after npm
// succeeded, so an interrupted install is never mistaken for a complete one.
//
// The test is skipped, with one line saying why, when node or npm is not on
// PATH or when npm fails (for example without a network).
func installNPM(t *testing.T, pkg, version string) (dir string) {
	t.Helper()
	requireTool(t, "node")
	requireTool(t, "npm")
	root := repoRoot(t)
	tools := filepath.Join(root, ".hosttools")
	dir = filepath.Join(tools, npmDirName(pkg)+"@"+version)
	if installed(dir, pkg, version) {
		return dir
	}
	if err := os.MkdirAll(tools, 0o755); err != nil {
		t.Fatalf("hosttest: %v", err)
	}
	tmp, err := os.MkdirTemp(tools, ".tmp-"+filepath.Base(dir)+"-")
	if err != nil {
		t.Fatalf("hosttest: %v", err)
	}
	defer os.RemoveAll(tmp) // a no-op once renamed

	spec := pkg + "@" + version
	t.Logf("hosttest: npm install %s into %s", spec, dir)
	ctx, cancel := context.WithTimeout(context.Background(), npmInstallTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "npm", "install", "--no-audit", "--no-fund", "--prefix", tmp, spec)
	cmd.Env = append(os.Environ(), "npm_config_update_notifier=false")
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	if err == nil && !installed(tmp, pkg, version) {
		err = fmt.Errorf("node_modules/%s/package.json is missing or has another version", pkg)
	}
	if err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("no result within %v", npmInstallTimeout)
		}
		t.Logf("hosttest: npm output:\n%s", firstLines(out, npmLogLines))
		t.Skipf("hosttest: skipping: npm install %s failed: %s", spec, npmReason(err, out))
	}

	if err := os.Rename(tmp, dir); err != nil {
		// Another test process may have finished the same install first.
		if installed(dir, pkg, version) {
			return dir
		}
		// Whatever is there is not a complete install: replace it.
		if rerr := os.RemoveAll(dir); rerr != nil {
			t.Fatalf("hosttest: %v", rerr)
		}
		if err := os.Rename(tmp, dir); err != nil {
			t.Fatalf("hosttest: %v", err)
		}
	}
	return dir
}

// requireTool skips the test when name is not on PATH.
func requireTool(t *testing.T, name string) {
	t.Helper()
	if _, err := exec.LookPath(name); err != nil {
		t.Skipf("hosttest: skipping: %s is not on PATH", name)
	}
}

// installed reports whether dir holds pkg at exactly version.
func installed(dir, pkg, version string) bool {
	data, err := os.ReadFile(filepath.Join(dir, "node_modules", filepath.FromSlash(pkg), "package.json"))
	if err != nil {
		return false
	}
	var meta struct {
		Version string `json:"version"`
	}
	return json.Unmarshal(data, &meta) == nil && meta.Version == version
}

// npmDirName turns a package name into a folder name: "@scope/name" becomes
// "scope+name". npm names never contain "+", so two packages never share a
// folder.
func npmDirName(pkg string) string {
	return strings.ReplaceAll(strings.TrimPrefix(pkg, "@"), "/", "+")
}

// npmReason is a one-line reason for a failed install: npm's error code and
// first error message when it printed them, else err.
func npmReason(err error, out []byte) string {
	var code, msg string
	for line := range strings.Lines(string(out)) {
		line, ok := strings.CutPrefix(strings.TrimSpace(line), "npm error ")
		if !ok {
			line, ok = strings.CutPrefix(line, "npm ERR! ")
		}
		if !ok {
			continue
		}
		word, rest, _ := strings.Cut(line, " ")
		switch word {
		case "code":
			if code == "" {
				code = rest
			}
		case "errno", "syscall", "path", "A":
			// Details repeated in the message, or the log file's name.
		default:
			if msg == "" {
				msg = line
			}
		}
	}
	// Without npm's own message, err (how npm exited) says the most.
	parts := []string{code, msg}
	if msg == "" {
		parts = []string{fmt.Sprint(err), code}
	}
	reason := strings.Join(slices.DeleteFunc(parts, func(s string) bool { return s == "" }), ": ")
	if len(reason) > 200 {
		reason = reason[:200] + "..."
	}
	return reason
}

// firstLines returns at most n lines of out.
func firstLines(out []byte, n int) string {
	lines := bytes.SplitAfterN(out, []byte("\n"), n+1)
	if len(lines) > n {
		lines = append(lines[:n], []byte("...\n"))
	}
	return string(bytes.Join(lines, nil))
}

// repoRoot returns the folder of the nearest go.mod at or above the working
// directory, which go test sets to the package's folder.
func repoRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatalf("hosttest: %v", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		} else if !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("hosttest: %v", err)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatalf("hosttest: no go.mod above the working directory")
		}
		dir = parent
	}
}
