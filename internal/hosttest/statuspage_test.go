//go:build hosttest

package hosttest

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/interlink-go/interlink/internal/testutil"
)

// TestStatusPageInChromium runs two agents against a real bus, loads the
// bus's status page in headless Chromium, and checks that the page
// Chromium rendered lists both sessions. A screenshot goes to the test's
// temporary folder (its path is logged with -v).
func TestStatusPageInChromium(t *testing.T) {
	browser := chromium(t) // skip early
	home := t.TempDir()
	bus := startBus(t, home)
	conf := filepath.Join(home, ".config", "interlink")
	key := filepath.Join(conf, "id.key")
	keygen(t, home, key)
	peers := filepath.Join(conf, "peers.json")
	if err := os.WriteFile(peers, []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	sessions := map[string]string{"status-alpha": "alpha <desk>", "status-beta": "beta & co"}
	for session, name := range sessions {
		cmd := exec.Command(filepath.Join(binaries(t), "interlink-mcp"),
			"--key", key, "--peers", peers, "--url", bus, "--session", session, "--name", name,
			"--state-dir", filepath.Join(home, "state"))
		cmd.Env = hostEnv(home)
		stdin, err := cmd.StdinPipe() // held open: the server runs until it closes
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { stdin.Close() })
		start(t, "interlink-mcp "+session, cmd)
	}
	testutil.Eventually(t, deliveryTimeout, "both sessions on the roster", func() bool {
		resp, err := http.Get(bus + "/roster")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		var r struct {
			Roster []struct {
				Session struct {
					SessionID string `json:"session_id"`
				} `json:"session"`
			} `json:"roster"`
		}
		if json.NewDecoder(resp.Body).Decode(&r) != nil {
			return false
		}
		seen := 0
		for _, e := range r.Roster {
			if _, ok := sessions[e.Session.SessionID]; ok {
				seen++
			}
		}
		return seen == len(sessions)
	})

	dom := headless(t, browser, bus+"/", "--dump-dom")
	rows := regexp.MustCompile(`(?s)<tr class="session">.*?</tr>`).FindAll(dom, -1)
	if len(rows) != len(sessions) {
		t.Fatalf("Chromium rendered %d session rows, want %d:\n%s", len(rows), len(sessions), dom)
	}
	for session, name := range sessions {
		escaped := strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(name)
		found := false
		for _, row := range rows {
			if bytes.Contains(row, []byte(`<code class="sid">`+session+`</code>`)) &&
				bytes.Contains(row, []byte(escaped)) && bytes.Contains(row, []byte(`class="live"`)) {
				found = true
			}
		}
		if !found {
			t.Errorf("no live row for session %s named %q in:\n%s", session, name, bytes.Join(rows, []byte("\n")))
		}
	}
	if bytes.Contains(dom, []byte("<desk>")) {
		t.Error("a roster name became markup in the rendered page")
	}

	shot := filepath.Join(t.TempDir(), "status.png")
	headless(t, browser, bus+"/", "--screenshot="+shot, "--window-size=1280,800", "--hide-scrollbars")
	png, err := os.ReadFile(shot)
	if err != nil {
		t.Fatalf("no screenshot: %v", err)
	}
	if !bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")) || len(png) < 1024 {
		t.Errorf("the screenshot is not a PNG of a page (%d bytes)", len(png))
	}
	t.Logf("screenshot of the status page: %s (%d bytes)", shot, len(png))
}
