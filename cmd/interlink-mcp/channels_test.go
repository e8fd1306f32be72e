package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// runChannelsProcess runs "interlink-mcp channels args..." as a process with PATH
// set to path alone, and returns its exit status and output.
func runChannelsProcess(t *testing.T, path string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	bin, err := exec.LookPath("interlink-mcp")
	if err != nil {
		t.Fatalf("interlink-mcp is not on PATH (TestMain puts it there): %v", err)
	}
	home := t.TempDir()
	env := []string{"PATH=" + path, "HOME=" + home, "USERPROFILE=" + home}
	cmd := exec.Command(bin, append([]string{"channels"}, args...)...)
	cmd.Env = env
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	if ee, ok := errors.AsType[*exec.ExitError](err); ok {
		return ee.ExitCode(), out.String(), errOut.String()
	}
	if err != nil {
		t.Fatal(err)
	}
	return 0, out.String(), errOut.String()
}

func TestChannelsExits127WithoutClaude(t *testing.T) {
	code, stdout, stderr := runChannelsProcess(t, t.TempDir())
	if code != exitNotFound {
		t.Errorf("status %d, want %d", code, exitNotFound)
	}
	if stdout != "" {
		t.Errorf("stdout %q, want nothing", stdout)
	}
	for _, want := range []string{"interlink-mcp: channels: claude is not on PATH\n", "interlink-mcp: hint: install Claude Code"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr %q lacks %q", stderr, want)
		}
	}
}

func TestChannelsStartsClaudeWithTheChannelFlag(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the stand-in claude is a shell script")
	}
	dir := t.TempDir()
	fake := "#!/bin/sh\nprintf 'INTERLINK_CHANNELS=%s\\n' \"$INTERLINK_CHANNELS\"\nprintf '[%s]\\n' \"$@\"\nexit 7\n"
	if err := os.WriteFile(filepath.Join(dir, "claude"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"default entry", []string{"--", "--resume", "a b"},
			"INTERLINK_CHANNELS=1\n[--dangerously-load-development-channels]\n[server:interlink]\n[--resume]\n[a b]\n"},
		{"plugin entry", []string{"--channel", "plugin:interlink@tools"},
			"INTERLINK_CHANNELS=1\n[--dangerously-load-development-channels]\n[plugin:interlink@tools]\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, _ := runChannelsProcess(t, dir+string(os.PathListSeparator)+"/bin:/usr/bin", tc.args...)
			if code != 7 {
				t.Errorf("status %d, want claude's own 7", code)
			}
			if stdout != tc.want {
				t.Errorf("claude saw\n%s\nwant\n%s", stdout, tc.want)
			}
		})
	}
}

func TestChannelsUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"channel without value", []string{"--channel"}, "interlink-mcp: channels: --channel needs a value\n"},
		{"claude argument before --", []string{"--resume"}, `interlink-mcp: channels: unexpected argument "--resume"; put Claude's arguments after --`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := runChannelsProcess(t, t.TempDir(), tc.args...)
			if code != exitUsage || !strings.HasPrefix(stderr, tc.want) {
				t.Errorf("status %d, stderr %q; want %d and %q", code, stderr, exitUsage, tc.want)
			}
		})
	}
}
