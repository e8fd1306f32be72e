package progress_test

import (
	"fmt"
	"log"
	"os"
	"strings"
	"time"

	"github.com/interlink-go/interlink/internal/progress"
)

// A peer opens a task; two minutes later, with no update sent, the hook
// that runs after a tool call reminds the model once.
func ExampleNudge() {
	root, err := os.MkdirTemp("", "progress")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(root)

	start := time.UnixMilli(1_700_000_000_000)
	m, err := progress.Open(root, "s1", &progress.Options{Now: func() time.Time { return start }})
	if err != nil {
		log.Fatal(err)
	}
	// The server receives an opening request for task t-1 from alice.
	if err := m.Inbound("t-1", "", "alice"); err != nil {
		log.Fatal(err)
	}

	// The host runs the hook after a tool call, with its input on stdin.
	stdin := `{"session_id":"s1","hook_event_name":"PostToolUse"}`
	getenv := func(string) string { return "" } // default interval, 60 s
	for _, after := range []time.Duration{30 * time.Second, 2 * time.Minute, 150 * time.Second} {
		var out strings.Builder
		if err := progress.Nudge(strings.NewReader(stdin), &out, root, getenv, start.Add(after)); err != nil {
			log.Fatal(err)
		}
		if out.Len() == 0 {
			fmt.Printf("after %v: nothing\n", after)
			continue
		}
		fmt.Printf("after %v: %s", after, out.String())
	}
	// Output:
	// after 30s: nothing
	// after 2m0s: {"hookSpecificOutput":{"hookEventName":"PostToolUse","additionalContext":"Interlink progress check: you are working on task \"t-1\" for peer \"alice\" and have not sent them an update for more than 60 s. Send a short progress note now with send_message(to=\"alice\", status=\"update\", task_id=\"t-1\", text=...), or, if the task is finished, report the outcome with status \"result\" (or \"failed\") instead."}}
	// after 2m30s: nothing
}
