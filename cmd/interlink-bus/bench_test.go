package main

import (
	"bytes"
	"context"
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
