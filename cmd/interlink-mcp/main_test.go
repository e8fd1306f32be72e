package main

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/interlink-go/interlink/internal/cmdline/cmdlinetest"
	"github.com/interlink-go/interlink/internal/identity"
)

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"interlink-mcp": main,
	})
}

// TestScripts runs testdata/*.txtar. Besides the standard commands they have:
//
//	exitcode N PROG [ARGS...]  run PROG like exec and require exit status N
//	keyinfo FILE [OUTPUT]      check a key file, print its public key and
//	                           fingerprint, and, given OUTPUT (a file or
//	                           "stdout"), require keygen's lines for it there
//	[!] mode PATH PERM         require permission bits PERM (not on Windows)
//
// and the doctor scripts' commands ([doctorCmds]).
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata",
		RequireExplicitExec: true,
		Setup: func(env *testscript.Env) error {
			env.Setenv("HOME", env.WorkDir)
			env.Setenv("USERPROFILE", env.WorkDir)
			schema, err := filepath.Abs(filepath.Join("testdata", "doctor.schema.json"))
			if err != nil {
				return err
			}
			env.Setenv("DOCTOR_SCHEMA", schema)
			return nil
		},
		Cmds: scriptCmds(),
	})
}

// scriptCmds returns the custom commands of the scripts: those listed
// above and [doctorCmds].
func scriptCmds() map[string]func(ts *testscript.TestScript, neg bool, args []string) {
	cmds := map[string]func(ts *testscript.TestScript, neg bool, args []string){
		"exitcode": cmdlinetest.ExitCode,
		"keyinfo":  cmdKeyinfo,
		"mode":     cmdMode,
	}
	maps.Copy(cmds, doctorCmds)
	return cmds
}

func cmdKeyinfo(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("keyinfo does not support !")
	}
	if len(args) < 1 || len(args) > 2 {
		ts.Fatalf("usage: keyinfo FILE [OUTPUT]")
	}
	var output string
	if len(args) == 2 {
		output = ts.ReadFile(args[1]) // read before this command replaces stdout
	}

	path := ts.MkAbs(args[0])
	fi, err := os.Stat(path)
	ts.Check(err)
	if fi.Size() != 44 {
		ts.Fatalf("%s is %d bytes, want 44", args[0], fi.Size())
	}
	if runtime.GOOS != "windows" && fi.Mode().Perm() != 0o600 {
		ts.Fatalf("%s has mode %#o, want 0600", args[0], fi.Mode().Perm())
	}
	signer, err := identity.LoadKeyFile(path)
	ts.Check(err)
	pub := signer.Public()
	lines := []string{
		"public key : " + pub.String(),
		"fingerprint: " + pub.Fingerprint(),
	}
	fmt.Fprintf(ts.Stdout(), "%s\n%s\n", lines[0], lines[1])

	if len(args) == 2 {
		have := strings.Split(output, "\n")
		want := append(lines, fmt.Sprintf(`{ "your-petname-for-me": { "key": "%s" } }`, pub))
		for _, w := range want {
			if !slices.Contains(have, w) {
				ts.Fatalf("%s has no line %q", args[1], w)
			}
		}
	}
}

func cmdMode(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: mode PATH PERM")
	}
	want, err := strconv.ParseUint(args[1], 8, 32)
	ts.Check(err)
	if runtime.GOOS == "windows" {
		return // no Unix permission bits to compare
	}
	fi, err := os.Stat(ts.MkAbs(args[0]))
	ts.Check(err)
	got := fi.Mode().Perm()
	switch {
	case !neg && got != os.FileMode(want):
		ts.Fatalf("%s has mode %#o, want %#o", args[0], got, want)
	case neg && got == os.FileMode(want):
		ts.Fatalf("%s has mode %#o, want any other", args[0], got)
	}
}
