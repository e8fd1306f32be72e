package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func runBench(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(context.Background(), append([]string{"bench"}, args...), nil, &out, &errOut)
	return code, out.String(), errOut.String()
}

// TestBenchSignedSealedPrintsEachBesideThePlain runs the bench with
// --signed --sealed and checks that every variant has its line and its
// ratio to the plain roundtrip of the same run.
func TestBenchSignedSealedPrintsEachBesideThePlain(t *testing.T) {
	code, out, errOut := runBench(t, "--signed", "--sealed", "--keepalive", "--duration", "300ms")
	if code != exitOK {
		t.Fatalf("exit %d, stderr %s", code, errOut)
	}
	for _, want := range []string{"\nroundtrip  ops=", "\nsigned     ops=", "\nsealed     ops=", "\nsigned+sealed ops=",
		"# signed/roundtrip ops/s: ", "# sealed/roundtrip ops/s: ", "# signed+sealed/roundtrip ops/s: "} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if n := strings.Count(out, " errors=0 "); n != 4 {
		t.Errorf("%d of 4 lines report no errors:\n%s", n, out)
	}
}

func TestBenchVariantsRefusedOutsideTheInProcessRoundtrip(t *testing.T) {
	for _, args := range [][]string{
		{"--tls", "--mode", "pipeline"},
		{"--signed", "--url", "http://127.0.0.1:1"},
		{"--sealed", "--store", "nats", "--nats", "nats://127.0.0.1:1"},
	} {
		code, _, errOut := runBench(t, args...)
		if code != exitUsage || !strings.Contains(errOut, "--tls, --signed and --sealed apply to mode roundtrip") {
			t.Errorf("%v: exit %d, stderr %s", args, code, errOut)
		}
	}
}

// TestBenchTLSPrintsItBesideThePlain runs the bench with --tls alone and
// checks that the TLS cycle has its line, without errors, its ratio to the
// plain roundtrip of the same run, and a header saying its bus serves
// HTTPS; and that no other variant is measured.
func TestBenchTLSPrintsItBesideThePlain(t *testing.T) {
	code, out, errOut := runBench(t, "--tls", "--keepalive", "--duration", "300ms")
	if code != exitOK {
		t.Fatalf("exit %d, stderr %s", code, errOut)
	}
	for _, want := range []string{"\nroundtrip  ops=", "\ntls        ops=", "# tls/roundtrip ops/s: ", "tls: HTTPS with a certificate made for the run"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if n := strings.Count(out, " errors=0 "); n != 2 {
		t.Errorf("%d of 2 lines report no errors:\n%s", n, out)
	}
	for _, other := range []string{"signed", "sealed"} {
		if strings.Contains(out, other) {
			t.Errorf("output measures %s, which was not asked for:\n%s", other, out)
		}
	}
}

func TestBenchUsageNamesTheVariantFlags(t *testing.T) {
	code, out, _ := runBench(t, "--help")
	for _, flag := range []string{"\n    --tls ", "\n    --signed ", "\n    --sealed "} {
		if !strings.Contains(out, flag) {
			t.Errorf("bench --help (exit %d) does not describe %q:\n%s", code, flag, out)
		}
	}
}

// TestBenchCPUProfileWritesANewFileOnly runs the bench with --cpuprofile:
// the file holds a CPU profile (gzip-compressed protocol buffers, as
// go tool pprof reads); a file that already exists is refused and left as
// it was.
func TestBenchCPUProfileWritesANewFileOnly(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cpu.out")
	code, out, errOut := runBench(t, "--keepalive", "--duration", "300ms", "--cpuprofile", path)
	if code != exitOK || !strings.Contains(out, "\nroundtrip  ops=") {
		t.Fatalf("exit %d, stdout %s, stderr %s", code, out, errOut)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("the profile is not gzip-compressed: %v", err)
	}
	if n, err := io.Copy(io.Discard, zr); err != nil || n == 0 {
		t.Fatalf("the profile: %d bytes, %v", n, err)
	}

	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	code, _, errOut = runBench(t, "--keepalive", "--duration", "300ms", "--cpuprofile", path)
	if code != exitError || !strings.Contains(errOut, "--cpuprofile") || !strings.Contains(errOut, "exists") {
		t.Errorf("an existing profile file: exit %d, stderr %s; want exit %d naming --cpuprofile", code, errOut, exitError)
	}
	if after, err := os.ReadFile(path); err != nil || !bytes.Equal(after, before) {
		t.Errorf("the existing file changed (%v)", err)
	}
}
