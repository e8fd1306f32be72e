package main

import (
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/interlink-go/interlink/internal/setup"
)

func TestServerWarnsWhenOthersCanReadTheKey(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("Windows keeps file permissions in access lists, not mode bits")
	}
	for _, tc := range []struct {
		name string
		mode os.FileMode
		warn bool
	}{
		{"readable by all", 0o644, true},
		{"readable by the group", 0o640, true},
		{"owner only", 0o600, false},
		{"owner read only", 0o400, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newAgentFiles(t)
			if err := os.Chmod(f.key, tc.mode); err != nil {
				t.Fatal(err)
			}
			p := launchMCP(t, f.env("http://127.0.0.1:1", "INTERLINK_SESSION=keymode"))
			p.initialize()
			if code := p.closeAndWait(); code != 0 {
				t.Fatalf("exit status %d\n%s", code, p.stderr.String())
			}
			logs := p.stderr.String()
			fix := "run: chmod 600 " + setup.ShellQuote(f.key)
			if got := strings.Contains(logs, fix); got != tc.warn {
				t.Errorf("mode %04o: warning with %q shown: %v, want %v\n%s", tc.mode, fix, got, tc.warn, logs)
			}
		})
	}
}
