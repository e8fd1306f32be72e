package main

import (
	"errors"
	"os/exec"
	"strconv"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// TestMain makes the test binary double as interlink-bus: testscript puts a
// copy named interlink-bus on PATH, and running that copy runs main, signal
// handling included. Scripts and the process tests both use it.
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"interlink-bus": main,
	})
}

// TestScripts runs testdata/*.txtar. Besides the standard commands they have
// "exitcode N PROG [ARGS...]", which runs PROG like exec and requires exit
// status N.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata",
		RequireExplicitExec: true,
		Setup: func(env *testscript.Env) error {
			env.Setenv("HOME", env.WorkDir)
			env.Setenv("USERPROFILE", env.WorkDir)
			// The scripts set what they test; nothing leaks in from the
			// environment of the test run.
			for _, name := range []string{"INTERLINK_ADDR", "INTERLINK_DB", "INTERLINK_QUEUE_CAP", "INTERLINK_LOG_LEVEL"} {
				env.Setenv(name, "")
			}
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"exitcode": cmdExitCode,
		},
	})
}

func cmdExitCode(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("exitcode does not support !")
	}
	if len(args) < 2 {
		ts.Fatalf("usage: exitcode N PROG [ARGS...]")
	}
	want, err := strconv.Atoi(args[0])
	ts.Check(err)
	got := 0
	if err := ts.Exec(args[1], args[2:]...); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			ts.Fatalf("exitcode: %v", err)
		}
		got = ee.ExitCode()
	}
	if got != want {
		ts.Fatalf("%s exited with status %d, want %d", args[1], got, want)
	}
}
