package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/interlink-go/interlink/internal/bus/bustest"
)

// BenchmarkStartToInitialize measures how long a host waits for a new
// session's server: from starting the process (a release-style build of
// this command, made once with CGO_ENABLED=0) until its answer to
// initialize has been read. The shutdown after each round is not timed.
func BenchmarkStartToInitialize(b *testing.B) {
	bin := buildBinary(b)
	url := bustest.Start(b, nil)
	f := newAgentFiles(b)
	env := f.env(url, "INTERLINK_SESSION=bench", "INTERLINK_LOG_LEVEL=warn")
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",` +
		`"capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}` + "\n"
	var lat []time.Duration
	for b.Loop() {
		t0 := time.Now()
		cmd := exec.Command(bin)
		cmd.Env = env
		stdin, _ := cmd.StdinPipe()
		stdout, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		if _, err := stdin.Write([]byte(init)); err != nil {
			b.Fatal(err)
		}
		line, err := bufio.NewReader(stdout).ReadString('\n')
		if err != nil || !strings.Contains(line, `"serverInfo"`) {
			b.Fatalf("initialize answer %q, %v", line, err)
		}
		lat = append(lat, time.Since(t0))
		b.StopTimer()
		_ = stdin.Close()
		if err := cmd.Wait(); err != nil {
			b.Fatalf("exit: %v", err)
		}
		b.StartTimer()
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}

// buildBinary builds interlink-mcp with CGO_ENABLED=0 into a temporary
// folder and returns its path.
func buildBinary(b *testing.B) string {
	b.Helper()
	bin := filepath.Join(b.TempDir(), "interlink-mcp")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// BenchmarkWaitPendingNotice measures the Stop hook's cost when a notice is
// already waiting: from starting `interlink-mcp wait` to its exit with
// status 2 after printing the notice. The cursor is reset between rounds,
// untimed.
func BenchmarkWaitPendingNotice(b *testing.B) {
	bin := buildBinary(b)
	state := b.TempDir()
	dir := filepath.Join(state, "inbox")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		b.Fatal(err)
	}
	line := `{"sender":"Interlink","msg_id":"0a1b2c3d","content":"[Interlink inbox notice] receive_messages(notification_id=\"0a1b2c3d\")"}` + "\n"
	if err := os.WriteFile(filepath.Join(dir, "s1.jsonl"), []byte(line), 0o600); err != nil {
		b.Fatal(err)
	}
	cursor := filepath.Join(dir, "s1.cursor")
	env := append(cleanEnv(), "INTERLINK_STATE_DIR="+state)
	var lat []time.Duration
	for b.Loop() {
		b.StopTimer()
		_ = os.Remove(cursor)
		b.StartTimer()
		t0 := time.Now()
		cmd := exec.Command(bin, "wait", "--session", "s1")
		cmd.Env = env
		err := cmd.Run()
		lat = append(lat, time.Since(t0))
		if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 2 {
			b.Fatalf("wait: %v", err)
		}
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}

// BenchmarkNpxTrivialBin is the yardstick for BenchmarkWaitPendingNotice:
// what a hook pays when it starts through `npx -y` a local package whose
// bin does nothing, as an npm-packaged listener would every turn. It is
// skipped without node and npx.
func BenchmarkNpxTrivialBin(b *testing.B) {
	npx, err := exec.LookPath("npx")
	if err != nil {
		b.Skip("npx is not on PATH")
	}
	dir := b.TempDir()
	pkg := filepath.Join(dir, "trivial")
	if err := os.MkdirAll(pkg, 0o755); err != nil {
		b.Fatal(err)
	}
	files := map[string]string{
		"package.json": `{"name":"trivial-bin","version":"1.0.0","bin":{"trivial-bin":"bin.js"}}`,
		"bin.js":       "#!/usr/bin/env node\nprocess.exit(0)\n",
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(pkg, name), []byte(data), 0o755); err != nil {
			b.Fatal(err)
		}
	}
	install := exec.Command("npm", "install", "--no-audit", "--no-fund", "--offline", "./trivial")
	install.Dir = dir
	if out, err := install.CombinedOutput(); err != nil {
		b.Skipf("npm install of a local package failed: %v\n%s", err, out)
	}
	var lat []time.Duration
	for b.Loop() {
		t0 := time.Now()
		cmd := exec.Command(npx, "-y", "trivial-bin")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("npx: %v\n%s", err, out)
		}
		lat = append(lat, time.Since(t0))
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}
