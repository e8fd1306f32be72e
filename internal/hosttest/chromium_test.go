//go:build hosttest

package hosttest

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// outcomeTB records how a helper ended the test it was given: by a skip
// or a failure, and with what line.
type outcomeTB struct {
	testing.TB
	skip, fatal string
}

func (o *outcomeTB) Helper() {}

func (o *outcomeTB) Skipf(format string, args ...any) {
	o.skip = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func (o *outcomeTB) Skip(args ...any) {
	o.skip = fmt.Sprint(args...)
	runtime.Goexit()
}

func (o *outcomeTB) Fatalf(format string, args ...any) {
	o.fatal = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func (o *outcomeTB) Fatal(args ...any) {
	o.fatal = fmt.Sprint(args...)
	runtime.Goexit()
}

// runHelper runs f with an outcomeTB wrapping t, on a goroutine of its
// own so that a skip or failure ends only f.
func runHelper(t *testing.T, f func(tb testing.TB)) *outcomeTB {
	o := &outcomeTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(o)
	}()
	<-done
	return o
}

// Without Chromium on PATH the test never runs a package manager, even
// as root with apt-get, apt, dnf, yum and sudo on PATH: outside CI it
// skips with a line saying how to install Chromium, in CI it fails.
func TestMissingChromiumIsNeverInstalled(t *testing.T) {
	dir := t.TempDir()
	called := filepath.Join(dir, "called")
	for _, tool := range []string{"apt-get", "apt", "dnf", "yum", "sudo", "snap"} {
		script := "#!/bin/sh\necho " + tool + " \"$@\" >> '" + called + "'\n"
		if err := os.WriteFile(filepath.Join(dir, tool), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", dir)
	for _, tc := range []struct {
		ci         string
		skip, fail bool
	}{
		{ci: "", skip: true},
		{ci: "true", fail: true},
	} {
		t.Run("CI="+tc.ci, func(t *testing.T) {
			t.Setenv("CI", tc.ci)
			o := runHelper(t, func(tb testing.TB) { chromium(tb) })
			if data, err := os.ReadFile(called); err == nil {
				t.Fatalf("the test ran a package manager:\n%s", data)
			}
			switch {
			case tc.skip && (o.skip == "" || !strings.Contains(o.skip, ".ci/install-chromium")):
				t.Errorf("skip line %q (failure %q), want one naming .ci/install-chromium", o.skip, o.fatal)
			case tc.fail && (o.fatal == "" || !strings.Contains(o.fatal, ".ci/install-chromium")):
				t.Errorf("failure %q (skip %q), want one naming .ci/install-chromium", o.fatal, o.skip)
			}
		})
	}
}
