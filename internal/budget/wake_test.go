package budget

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestTyped(t *testing.T) {
	for _, tc := range []struct {
		name   string
		prompt string
		want   bool
	}{
		{"a typed prompt", "Carry on with the review.", true},
		{"a typed prompt that talks about interlink", "why did interlink pause bob? see [interlink notice] above", true},
		{"blank", " \n\t", false},
		{"empty", "", false},
		{"a marked text", MarkWake("[interlink notice] Interlink itself wrote this"), false},
		{"the mark anywhere", "Stop hook blocking error from command \"Stop\": " + WakeLine, false},
		{"a Claude Code wake-up", "<task-notification>\n<summary>Stop hook feedback</summary>\n</task-notification>", false},
		{"a background task's end", "<task-notification>\n<status>completed</status>\n</task-notification>", false},
		{"a pasted notice", "what does this mean?\n" + MarkWake("Wake-ups from 'bob' are paused"), false},
	} {
		if got := Typed(tc.prompt); got != tc.want {
			t.Errorf("%s: Typed(%q) = %v, want %v", tc.name, tc.prompt, got, tc.want)
		}
	}
}

func TestMarkWake(t *testing.T) {
	got := MarkWake("text")
	if got != WakeLine+"\ntext" {
		t.Errorf("MarkWake(text) = %q", got)
	}
	if again := MarkWake(got); again != got {
		t.Errorf("MarkWake of a marked text = %q, want it unchanged", again)
	}
	if !strings.Contains(WakeLine, WakeMark) || strings.Contains(WakeLine, "\n") {
		t.Errorf("WakeLine %q must hold WakeMark on one line", WakeLine)
	}
	for _, text := range []string{"", "x", WakeMark, "\n" + WakeLine} {
		if Typed(MarkWake(text)) {
			t.Errorf("Typed(MarkWake(%q)) = true", text)
		}
	}
}

// Only a typed prompt restarts the budgets: RecordPrompt and Prompt leave
// a pause alone for any other prompt.
func TestOnlyATypedPromptLiftsAPause(t *testing.T) {
	c := newClock()
	root := t.TempDir()
	b := open(t, root, c, Limit{1, time.Hour}, Limit{})
	bob := peerOf(t, 1)
	if paused, err := b.Woke(t.Context(), []Peer{bob}); err != nil || len(paused) != 1 {
		t.Fatalf("pausing bob: %v, %v", paused, err)
	}
	c.add(time.Second)
	for _, prompt := range []string{MarkWake("[Interlink inbox notice] Unread Interlink messages are waiting."), "<task-notification>", ""} {
		if ok, err := RecordPrompt(root, "s1", prompt, c.now()); ok || err != nil {
			t.Errorf("RecordPrompt(%q) = %v, %v; want false, nil", prompt, ok, err)
		}
		if ok, err := b.Prompt(prompt); ok || err != nil {
			t.Errorf("Prompt(%q) = %v, %v; want false, nil", prompt, ok, err)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "turn", "s1")); !os.IsNotExist(err) {
		t.Fatalf("a prompt the operator did not type wrote the turn file (%v)", err)
	}
	if p, _ := b.Paused(); !p[bob.Key] {
		t.Fatal("bob's pause lifted without a typed prompt")
	}
	if ok, err := b.Prompt("Carry on."); !ok || err != nil {
		t.Fatalf("Prompt of a typed prompt = %v, %v", ok, err)
	}
	c.add(time.Millisecond)
	if p, _ := b.Paused(); p[bob.Key] {
		t.Error("bob still paused after the operator's prompt")
	}
	if _, err := RecordPrompt(root, "../x", "Carry on.", c.now()); err == nil {
		t.Error("RecordPrompt took a bad session id")
	}
}
