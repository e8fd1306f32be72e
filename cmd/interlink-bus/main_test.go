package main

import (
	"testing"

	"github.com/interlink-go/interlink/internal/cmdline/cmdlinetest"
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
			for _, name := range []string{"INTERLINK_ADDR", "INTERLINK_DB", "INTERLINK_QUEUE_CAP", "INTERLINK_LOG_LEVEL",
				"INTERLINK_NATS", "INTERLINK_NATS_STREAM", "INTERLINK_NATS_REPLICAS", "INTERLINK_NATS_CREDS"} {
				env.Setenv(name, "")
			}
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"exitcode": cmdlinetest.ExitCode,
		},
	})
}
