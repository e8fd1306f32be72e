package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
)

// The demo runs on its embedded defaults, shows the pairing handshake, the
// exchange and the stranger dropped, exits 0 and leaves nothing behind.
func TestDemo(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	var out, errOut bytes.Buffer
	c := &cli{stdout: &out, stderr: &errOut, getenv: os.Getenv}
	if code := c.run(context.Background(), []string{"demo"}, strings.NewReader("")); code != 0 {
		t.Fatalf("demo exit status %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errOut.String())
	}
	for _, w := range []string{
		"Every peers.json is empty",
		"to an agent, a bus is a relay",
		"each under a petname: a name its own operator chose",
		"the MCP server of one host session",
		// Which state bob sees depends on whether the notice's outcome was
		// saved before he looked; either way the demo says what it means.
		"] is the message's delivery state: ",
		"Pairing request to bob",
		`bob's host is told, as unverified metadata (sender "Interlink")`,
		`listed as peer "alice"`,
		"Paired with 'bob'",
		"queued for bob (bob-1)",
		`receive_messages(notification_id="`,
		"Could you review the parser change",
		"Acknowledged 1 ",
		`<interlink sender="bob"`,
		"status=\"result\"",
		"dropped it: reason not_allowlisted",
		"bob calls receive_messages: No unread messages",
	} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("demo output lacks %q", w)
		}
	}
	if errOut.Len() > 0 {
		t.Errorf("stderr: %s", errOut.String())
	}
	left, err := os.ReadDir(tmp)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) > 0 {
		t.Errorf("demo left %d entries in the temporary folder, first %s", len(left), left[0].Name())
	}
}
