//go:build unix

package delivery

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/interlink-go/interlink/internal/budget"
	"github.com/interlink-go/interlink/internal/codex"
	"github.com/interlink-go/interlink/internal/protocol"
	"github.com/interlink-go/interlink/internal/testutil"
)

// queueStub writes a codex stand-in that saves the text of each queue run
// in its own file of the returned folder, and exits with status 1 while a
// file named fail exists there.
func queueStub(t *testing.T) (bin, dir string) {
	t.Helper()
	dir = t.TempDir()
	bin = filepath.Join(dir, "codex")
	script := "#!/bin/sh\n[ -e \"" + dir + "/fail\" ] && exit 1\nprintf '%s' \"$5\" > \"" + dir + "/run.$$\"\n"
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin, dir
}

// queued returns the texts the stub saved.
func queued(t *testing.T, dir string) []string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "run.*"))
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		texts = append(texts, string(data))
	}
	return texts
}

// Every text a sink hands the host to start a turn is one that the prompt
// hook does not take for the operator's: an inbox notice and a full-text
// record (a pause or pairing notice) through a Claude channel and through
// codex queue, and a saved failure handed to codex queue again.
func TestEveryHandoffStartsATurnThatIsNotTheOperators(t *testing.T) {
	ctx := context.Background()
	records := map[string]Record{
		"inbox notice":  NoticeRecord("n1", "[Interlink inbox notice] Unread Interlink messages are waiting."),
		"pause notice":  {Sender: protocol.SystemSender, MsgID: "m1", Content: "Wake-ups from 'bob' are paused."},
		"paired notice": {Sender: "bob", MsgID: "m2", Content: "Paired with 'bob'."},
	}

	var sent []string
	ch := Channel{Send: func(_ string, p map[string]any) error {
		sent = append(sent, p["content"].(string))
		return nil
	}}
	bin, dir := queueStub(t)
	failed, err := codex.OpenFailed(t.TempDir(), testutil.Signer(t, 1).Public(), "01900000-1234-7000-8000-123456789abc")
	if err != nil {
		t.Fatal(err)
	}
	cx := &Codex{Bin: bin, Thread: "01900000-1234-7000-8000-123456789abc", Failed: failed, Pause: 1}
	for name, r := range records {
		sent = nil
		if err := ch.Text(ctx, r); err != nil {
			t.Fatal(err)
		}
		if name == "inbox notice" {
			if _, err := ch.Notice(ctx, r.MsgID, r.Content); err != nil {
				t.Fatal(err)
			}
		}
		for _, text := range sent {
			if budget.Typed(text) {
				t.Errorf("%s through a channel: %q is taken for a typed prompt", name, text)
			}
		}
	}
	for _, r := range records {
		if err := cx.Text(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cx.Notice(ctx, "n2", "[Interlink inbox notice] Unread Interlink messages are waiting."); err != nil {
		t.Fatal(err)
	}
	texts := queued(t, dir)
	if len(texts) != len(records)+1 {
		t.Fatalf("%d codex queue runs, want %d", len(texts), len(records)+1)
	}
	for _, text := range texts {
		if budget.Typed(text) || !strings.HasPrefix(text, budget.WakeLine+"\n") {
			t.Errorf("codex queue text %q does not start with the wake line", text)
		}
	}

	// A notice that could not be handed over is saved, and handed over
	// again by failed_deliveries retry.
	if err := os.WriteFile(filepath.Join(dir, "fail"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := cx.Notice(ctx, "n3", "[Interlink inbox notice] Unread Interlink messages are waiting."); err == nil {
		t.Fatal("the notice went through a failing codex queue")
	}
	if err := os.Remove(filepath.Join(dir, "fail")); err != nil {
		t.Fatal(err)
	}
	saved, err := failed.List()
	if err != nil || len(saved) != 1 {
		t.Fatalf("saved failures: %v, %v", saved, err)
	}
	if err := cx.Retry(ctx, saved[0]); err != nil {
		t.Fatal(err)
	}
	if texts := queued(t, dir); len(texts) != len(records)+2 {
		t.Fatalf("%d codex queue runs after the retry, want %d", len(texts), len(records)+2)
	} else {
		for _, text := range texts {
			if budget.Typed(text) {
				t.Errorf("codex queue text %q is taken for a typed prompt", text)
			}
		}
	}
}
