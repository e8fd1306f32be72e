package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/interlink-go/interlink/internal/bus/bustest"
	"github.com/interlink-go/interlink/internal/doctor"
)

// serversCheck runs doctor for session in the environment env and
// returns its check of the session's server processes.
func serversCheck(t *testing.T, env []string, session string) doctor.Check {
	t.Helper()
	vars := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		vars[k] = v
	}
	var out, errOut bytes.Buffer
	c := &cli{stdout: &out, stderr: &errOut, getenv: func(k string) string { return vars[k] }}
	c.run(t.Context(), []string{"doctor", "--json", "--session", session}, nil)
	var rep doctorReport
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("%v:\n%s%s", err, out.String(), errOut.String())
	}
	for _, ch := range rep.Checks {
		if ch.ID == "servers" {
			return ch
		}
	}
	t.Fatalf("no servers check in %+v", rep.Checks)
	return doctor.Check{}
}

// Two servers started with one session id share its mailbox: doctor warns
// and names both process ids, and the second server warns when it starts.
// A server of another session of the identity is not counted, and once
// one of the two is killed, one runs.
func TestDoctorWarnsOfTwoServersOnOneSession(t *testing.T) {
	url := bustest.Start(t, nil)
	f := newAgentFiles(t)
	env := f.env(url, "INTERLINK_SESSION=shared")
	first := launchMCP(t, env)
	first.initialize()
	waitFor(t, "the first server marked running", func() bool {
		return serversCheck(t, env, "shared").Status == doctor.OK &&
			strings.Contains(serversCheck(t, env, "shared").Detail, fmt.Sprintf("process %d)", first.cmd.Process.Pid))
	})
	other := launchMCP(t, f.env(url, "INTERLINK_SESSION=another"))
	other.initialize()
	second := launchMCP(t, env)
	second.initialize()
	var ch doctor.Check
	waitFor(t, "doctor to see two servers", func() bool {
		ch = serversCheck(t, env, "shared")
		return ch.Status == doctor.Warn
	})
	for _, p := range []*mcpProc{first, second} {
		if !strings.Contains(ch.Detail, fmt.Sprint(p.cmd.Process.Pid)) {
			t.Errorf("detail %q does not name process %d", ch.Detail, p.cmd.Process.Pid)
		}
	}
	if strings.Contains(ch.Detail, fmt.Sprint(other.cmd.Process.Pid)) {
		t.Errorf("detail %q names the server of another session", ch.Detail)
	}
	if !strings.Contains(ch.Detail, "2 servers run for session shared") || !strings.Contains(ch.Detail, "share its mailbox") || ch.Fix == "" {
		t.Errorf("check %+v, want a warning that they share the mailbox, with a fix", ch)
	}
	waitFor(t, "the second server's warning", func() bool {
		return strings.Contains(second.stderr.String(), "another server runs for this session id")
	})
	if err := second.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	second.wait()
	if ch := serversCheck(t, env, "shared"); ch.Status != doctor.OK ||
		!strings.Contains(ch.Detail, fmt.Sprintf("one server runs for session shared (process %d)", first.cmd.Process.Pid)) {
		t.Errorf("after the second was killed: %+v", ch)
	}
}
