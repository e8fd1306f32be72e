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

// chromiumInstallTimeout bounds installing Debian's chromium package.
const chromiumInstallTimeout = 15 * time.Minute

// chromiumTimeout bounds one headless Chromium run.
const chromiumTimeout = 60 * time.Second

// chromium returns the path of Debian's headless-capable Chromium,
// installing the chromium package with apt-get when it is missing. Without
// apt-get, without the rights to use it, or when the install fails, the test
// is skipped with one line saying why.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	requireTool(t, "apt-get")
	if os.Geteuid() != 0 {
		t.Skip("hosttest: skipping: chromium is not installed, and installing it with apt-get needs root")
	}
	ctx, cancel := context.WithTimeout(context.Background(), chromiumInstallTimeout)
	defer cancel()
	t.Log("hosttest: apt-get install chromium")
	for _, args := range [][]string{{"update"}, {"install", "-y", "--no-install-recommends", "chromium"}} {
		cmd := exec.CommandContext(ctx, "apt-get", args...)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		cmd.WaitDelay = 5 * time.Second
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Logf("hosttest: apt-get output:\n%s", firstLines(out, npmLogLines))
			t.Skipf("hosttest: skipping: apt-get %s failed: %v", args[0], err)
		}
	}
	p, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("hosttest: skipping: chromium is still not on PATH after apt-get install")
	}
	return p
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
