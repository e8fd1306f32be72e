package loadgen

import (
	"context"
	"strings"
	"testing"
)

// TestVariantsRunBesideThePlainRoundtrip runs the plain roundtrip with
// every variant in one run and checks that each variant completed cycles
// without errors on its own bus and is reported beside the plain one.
func TestVariantsRunBesideThePlainRoundtrip(t *testing.T) {
	cfg := Config{TLS: true, Signed: true, Sealed: true, KeepAlive: true, Duration: 2 * short, Rounds: 2}
	rep, err := Run(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"roundtrip", "tls", "signed", "sealed", "tls+signed+sealed"}
	if len(rep.Results) != len(want) {
		t.Fatalf("results %v, want %v", resultNames(rep), want)
	}
	var out strings.Builder
	if err := rep.Write(&out); err != nil {
		t.Fatal(err)
	}
	for i, res := range rep.Results {
		if res.Name != want[i] {
			t.Fatalf("results %v, want %v", resultNames(rep), want)
		}
		if res.Ops == 0 || res.Errors != 0 {
			t.Errorf("%s: %d cycles, %d errors (%s)", res.Name, res.Ops, res.Errors, res.FirstError)
		}
		if i == 0 {
			continue
		}
		if res.Beside != "roundtrip" {
			t.Errorf("%s is set beside %q, want roundtrip", res.Name, res.Beside)
		}
		if line := "# " + res.Name + "/roundtrip ops/s: "; !strings.Contains(out.String(), line) {
			t.Errorf("report lacks %q:\n%s", line, out.String())
		}
	}
	if !strings.Contains(rep.Target, "--auth required") || !strings.Contains(rep.Target, "HTTPS") {
		t.Errorf("target %q does not say what the variants' buses are", rep.Target)
	}
}

// TestSignedAndSealedOnlyMeasureTheirCombination checks that --signed
// --sealed without --tls adds signed, sealed and signed+sealed.
func TestSignedAndSealedOnlyMeasureTheirCombination(t *testing.T) {
	rep, err := Run(context.Background(), Config{Signed: true, Sealed: true, KeepAlive: true, Duration: short}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(resultNames(rep), " "); got != "roundtrip signed sealed signed+sealed" {
		t.Fatalf("results %s", got)
	}
}

func resultNames(rep *Report) []string {
	var out []string
	for _, r := range rep.Results {
		out = append(out, r.Name)
	}
	return out
}
