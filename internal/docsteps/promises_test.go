package docsteps

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// wakePromise matches a promise that a session is woken, or a message
// announced, within a second or less.
var wakePromise = regexp.MustCompile(`(?i)\b(wak|woken|announc)[a-z-]*\b[^.]*\bwithin (half a|a|one|1) second|\bwithin (half a|a|one|1) second\b[^.]*\b(wak|woken|announc)`)

// A wake-up comes within a second only while nothing a session was told
// about waits for its acknowledgement; after that the next notice waits
// for the current one to expire, 30 s and then longer. Every paragraph of
// the documents that promises the second says so too, naming the 30 s.
func TestWakeUpPromisesNameTheBackOff(t *testing.T) {
	docs, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	docs = append(docs, "../../README.md", "../../SECURITY.md", "../../DESIGN.md", "../../codex/README.md")
	promises := 0
	for _, doc := range docs {
		data, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, para := range strings.Split(string(data), "\n\n") {
			flat := strings.Join(strings.Fields(para), " ")
			if !wakePromise.MatchString(flat) {
				continue
			}
			promises++
			if !strings.Contains(flat, "30 s") {
				t.Errorf("%s promises a wake-up within a second without saying that an unacknowledged message delays the next one (30 s, then longer):\n%s", doc, para)
			}
		}
	}
	if promises == 0 {
		t.Error("no document promises a wake-up within a second; has the wording changed?")
	}
}
