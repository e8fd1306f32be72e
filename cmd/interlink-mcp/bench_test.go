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
	bin := filepath.Join(b.TempDir(), "interlink-mcp")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
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
