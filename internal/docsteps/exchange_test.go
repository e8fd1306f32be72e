package docsteps

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

// exchangeTimeout bounds the whole exchange.
const exchangeTimeout = 60 * time.Second

// exchangeMain plays Claude Code for README step 5: it starts two sessions'
// servers the way the plugin's .mcp.json declares them, sends a message
// from session one to session two with to "self", runs the plugin's Stop
// hook the way Claude Code would after session two's turn, and fetches and
// acknowledges the message in session two. It prints one line per step and
// returns the exit status.
func exchangeMain() int {
	ctx, cancel := context.WithTimeout(context.Background(), exchangeTimeout)
	defer cancel()
	if err := exchange(ctx); err != nil {
		fmt.Fprintf(os.Stderr, "exchange: %v\n", err)
		return 1
	}
	return 0
}

func exchange(ctx context.Context) error {
	dir, err := pluginDir()
	if err != nil {
		return err
	}
	srv, err := readServer(filepath.Join(dir, ".mcp.json"))
	if err != nil {
		return err
	}
	one, err := srv.start(ctx, "one")
	if err != nil {
		return err
	}
	defer one.Close()
	two, err := srv.start(ctx, "two")
	if err != nil {
		return err
	}
	defer two.Close()

	// discover lists a session once its first announcement is on the bus.
	if _, err := until(ctx, one, "discover", nil, "→ two"); err != nil {
		return err
	}
	const text = "Hello from session one: the walkthrough works."
	sent, err := call(ctx, one, "send_message", map[string]any{"to": "self", "session": "two", "text": text})
	if err != nil {
		return err
	}
	if !strings.HasPrefix(sent, "queued for self (two)") {
		return fmt.Errorf("send_message answered %q", sent)
	}
	fmt.Println("exchange: sent to self, session two")

	woken, err := runStopHook(ctx, dir, "two")
	if err != nil {
		return err
	}
	fmt.Printf("exchange: the Stop hook woke session two: %s\n", firstLine(woken))

	got, err := until(ctx, two, "receive_messages", nil, text)
	if err != nil {
		return err
	}
	receipt := regexp.MustCompile(`\] Receipt: (\{[^\n]*\})`).FindStringSubmatch(got)
	if receipt == nil {
		return fmt.Errorf("no receipt in %q", got)
	}
	var r map[string]any
	if err := json.Unmarshal([]byte(receipt[1]), &r); err != nil {
		return err
	}
	ack, err := call(ctx, two, "acknowledge_messages", map[string]any{"messages": []any{r}})
	if err != nil {
		return err
	}
	fmt.Printf("exchange: session two acknowledged: %s\n", firstLine(ack))
	return nil
}

// server is the interlink server as the plugin's .mcp.json declares it.
type server struct {
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env"`
}

// readServer reads the "interlink" entry of a .mcp.json file.
func readServer(path string) (*server, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var f struct {
		MCPServers map[string]*server `json:"mcpServers"`
	}
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	s := f.MCPServers["interlink"]
	if s == nil || s.Command == "" {
		return nil, fmt.Errorf("%s declares no interlink server", path)
	}
	return s, nil
}

// defaultRef is Claude Code's ${VAR:-default} reference in .mcp.json.
var defaultRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}`)

// start starts the server for a Claude session id, with its declared
// environment expanded as Claude Code expands it, and initializes it.
func (s *server) start(ctx context.Context, session string) (*client.Client, error) {
	env := []string{"CLAUDE_CODE_SESSION_ID=" + session}
	for k, v := range s.Env {
		env = append(env, k+"="+defaultRef.ReplaceAllStringFunc(v, func(ref string) string {
			m := defaultRef.FindStringSubmatch(ref)
			if got := os.Getenv(m[1]); got != "" {
				return got
			}
			return m[2]
		}))
	}
	c, err := client.NewStdioMCPClient(s.Command, env, s.Args...)
	if err != nil {
		return nil, err
	}
	req := mcp.InitializeRequest{}
	req.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	req.Params.ClientInfo = mcp.Implementation{Name: "docsteps", Version: "1"}
	if _, err := c.Initialize(ctx, req); err != nil {
		c.Close()
		return nil, fmt.Errorf("session %s: initialize: %w", session, err)
	}
	return c, nil
}

// call calls a tool and returns its text.
func call(ctx context.Context, c *client.Client, tool string, args map[string]any) (string, error) {
	req := mcp.CallToolRequest{}
	req.Params.Name = tool
	req.Params.Arguments = args
	res, err := c.CallTool(ctx, req)
	if err != nil {
		return "", fmt.Errorf("%s: %w", tool, err)
	}
	var b strings.Builder
	for _, ct := range res.Content {
		if tc, ok := ct.(mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	if res.IsError {
		return "", fmt.Errorf("%s: %s", tool, b.String())
	}
	return b.String(), nil
}

// until calls a tool every 100 ms until its text contains want.
func until(ctx context.Context, c *client.Client, tool string, args map[string]any, want string) (string, error) {
	for {
		text, err := call(ctx, c, tool, args)
		if err != nil {
			return "", err
		}
		if strings.Contains(text, want) {
			return text, nil
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("%s never showed %q; last:\n%s", tool, want, text)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// runStopHook runs the plugin's Stop hook command the way Claude Code runs
// it, through sh with the hook's JSON on stdin, and returns what it printed
// on stderr. The hook must exit 2, Claude Code's signal to start a turn.
func runStopHook(ctx context.Context, dir, session string) (string, error) {
	data, err := os.ReadFile(filepath.Join(dir, "hooks", "hooks.json"))
	if err != nil {
		return "", err
	}
	var f struct {
		Hooks map[string][]struct {
			Hooks []struct {
				Command string `json:"command"`
			} `json:"hooks"`
		} `json:"hooks"`
	}
	if err := json.Unmarshal(data, &f); err != nil {
		return "", err
	}
	if len(f.Hooks["Stop"]) == 0 || len(f.Hooks["Stop"][0].Hooks) == 0 {
		return "", errors.New("the plugin has no Stop hook")
	}
	input, _ := json.Marshal(map[string]any{"session_id": session, "hook_event_name": "Stop", "stop_hook_active": false})
	cmd := exec.CommandContext(ctx, "sh", "-c", f.Hooks["Stop"][0].Hooks[0].Command)
	cmd.Stdin = bytes.NewReader(input)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err = cmd.Run()
	if ee, ok := errors.AsType[*exec.ExitError](err); ok && ee.ExitCode() == 2 {
		if !strings.Contains(stderr.String(), "receive_messages") {
			return "", fmt.Errorf("the Stop hook woke the session without naming receive_messages:\n%s", stderr.String())
		}
		return stderr.String(), nil
	}
	return "", fmt.Errorf("the Stop hook ended with %v, want exit status 2; stderr:\n%s", err, stderr.String())
}

// firstLine returns s up to its first line break.
func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
