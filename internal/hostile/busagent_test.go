package hostile

// Real agents, in this process, driven through their MCP tools against a
// bus, for the tests that check what a bus attack leaves working.

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/interlink-go/interlink/internal/agent"
	"github.com/interlink-go/interlink/internal/delivery"
	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/testutil"
)

// busAgentWait bounds every wait for an agent to show something.
const busAgentWait = 30 * time.Second

// busAgent is one running agent with its own key, peers.json and state,
// and an in-process MCP client.
type busAgent struct {
	t      testing.TB
	signer *identity.Signer
	name   string
	sink   *delivery.Memory
	c      *client.Client
	logs   *testutil.LockedBuffer
}

// startBusAgent runs an agent named name, whose key is made from seed, in
// session name+"-1", on the relay url, with an empty peers.json. It stops
// at cleanup.
func startBusAgent(t testing.TB, name string, seed byte, url string) *busAgent {
	t.Helper()
	dir := t.TempDir()
	s := testutil.Signer(t, seed)
	key := filepath.Join(dir, "id.key")
	if err := os.WriteFile(key, identity.EncodeKeyFile(s.Seed()), 0o600); err != nil {
		t.Fatal(err)
	}
	peers := filepath.Join(dir, "peers.json")
	if err := os.WriteFile(peers, []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	b := &busAgent{t: t, signer: s, name: name, sink: &delivery.Memory{}, logs: &testutil.LockedBuffer{}}
	a, err := agent.New(agent.Config{
		KeyPath:   key,
		PeersPath: peers,
		URLs:      []string{url},
		Name:      name,
		Session:   name + "-1",
		StateRoot: filepath.Join(dir, "state"),
		Cwd:       dir,
		Sink:      b.sink,
		Logger:    slog.New(slog.NewTextHandler(b.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Timing: agent.Timing{
			Announce: time.Second, Retry: 100 * time.Millisecond, PollWait: time.Second,
			RetryDelay: 50 * time.Millisecond, Notify: 50 * time.Millisecond,
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	b.c = a.Client()
	t.Cleanup(func() {
		_ = b.c.Close()
		a.Stop()
		if t.Failed() {
			t.Logf("%s's log:\n%s", name, b.logs.String())
		}
	})
	ctx := context.Background()
	if err := b.c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	req := mcp.InitializeRequest{}
	req.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	req.Params.ClientInfo = mcp.Implementation{Name: "hostile", Version: "1"}
	if _, err := b.c.Initialize(ctx, req); err != nil {
		t.Fatal(err)
	}
	return b
}

// call calls a tool and returns its text; a tool error or a JSON-RPC error
// fails the test.
func (b *busAgent) call(name string, args map[string]any) string {
	b.t.Helper()
	text, err := b.try(name, args)
	if err != nil {
		b.t.Fatalf("%s's %s(%v): %v", b.name, name, args, err)
	}
	return text
}

func (b *busAgent) try(name string, args map[string]any) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), busAgentWait)
	defer cancel()
	req := mcp.CallToolRequest{}
	req.Params.Name = name
	req.Params.Arguments = args
	res, err := b.c.CallTool(ctx, req)
	if err != nil {
		return "", err
	}
	var parts []string
	for _, ct := range res.Content {
		if tc, ok := ct.(mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	text := strings.Join(parts, "\n")
	if res.IsError {
		return "", fmt.Errorf("tool error: %s", text)
	}
	return text, nil
}

// waitFor calls a tool until its text contains want, and returns the text.
func (b *busAgent) waitFor(name string, args map[string]any, want string) string {
	b.t.Helper()
	var text string
	testutil.Eventually(b.t, busAgentWait, fmt.Sprintf("%s's %s to show %q", b.name, name, want), func() bool {
		var err error
		text, err = b.try(name, args)
		return err == nil && strings.Contains(text, want)
	})
	return text
}

// waitNotice waits until the agent's host got a notice containing want.
func (b *busAgent) waitNotice(want string) {
	b.t.Helper()
	testutil.Eventually(b.t, busAgentWait, fmt.Sprintf("a notice to %s with %q", b.name, want), func() bool {
		for _, r := range b.sink.Records() {
			if strings.Contains(r.Content, want) {
				return true
			}
		}
		return false
	})
}
