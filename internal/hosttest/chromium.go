//go:build hosttest

package hosttest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// chromiumTimeout bounds one headless Chromium run.
const chromiumTimeout = 60 * time.Second

// chromiumNames are the names Debian's chromium package, and others, give
// the browser on PATH.
var chromiumNames = []string{"chromium", "chromium-browser"}

// chromiumInstall is how to install Chromium; .ci/run runs it in CI.
const chromiumInstall = "sudo bash .ci/install-chromium (Debian's chromium package)"

// chromium returns the path of a headless-capable Chromium on PATH. A test
// never installs it: without one, the test is skipped with one line saying
// how to install it, or fails in CI (CI set), where .ci/run installs it
// before the tests.
func chromium(t testing.TB) string {
	t.Helper()
	for _, name := range chromiumNames {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("hosttest: chromium is not on PATH; .ci/run installs it before the tests with .ci/install-chromium")
	}
	t.Skipf("hosttest: skipping: chromium is not on PATH; install it with: %s", chromiumInstall)
	return ""
}

// headless runs Chromium without a window on url with the extra flags and
// returns what it printed on stdout. The flags keep it from reaching any
// network but loopback: background updates, sync and component downloads
// are off, and its profile is a fresh folder of the test.
func headless(t *testing.T, bin, url string, extra ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), chromiumTimeout)
	defer cancel()
	args := append([]string{
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-dev-shm-usage", "--user-data-dir=" + filepath.Join(t.TempDir(), "profile"),
	}, extra...)
	cmd := exec.CommandContext(ctx, bin, append(args, url)...)
	cmd.Env = hostEnv(t.TempDir())
	cmd.WaitDelay = 5 * time.Second
	var stderr limitedBuffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("hosttest: chromium %v: %v\n%s", extra, err, stderr.String())
	}
	return out
}

// limitedBuffer keeps the first 64 KiB written to it.
type limitedBuffer struct{ b []byte }

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := 64<<10 - len(l.b); room > 0 {
		l.b = append(l.b, p[:min(len(p), room)]...)
	}
	return len(p), nil
}

func (l *limitedBuffer) String() string { return string(l.b) }
