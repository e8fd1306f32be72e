package agent_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/interlink-go/interlink/internal/agent"
	"github.com/interlink-go/interlink/internal/agent/agenttest"
)

// rpcResponse is a JSON-RPC response as it appears on standard output.
type rpcResponse struct {
	ID     json.RawMessage `json:"id"`
	Result *struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
		IsError bool `json:"isError"`
	} `json:"result"`
	Error *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// serveStdio starts an agent of a new identity with Claude channels on or
// off, serving MCP over pipes, and returns the pipe to write its input
// to, the one to read its output from, and where Serve's error arrives
// once the input is closed.
func serveStdio(t *testing.T, channels bool) (in *io.PipeWriter, out *io.PipeReader, served <-chan error) {
	t.Helper()
	id := agenttest.NewIdent(t)
	a, err := agent.New(agent.Config{KeyPath: id.KeyPath, PeersPath: id.PeersPath, URLs: []string{agenttest.StartBus(t)},
		Session: "s1", StateRoot: t.TempDir(), Timing: agenttest.Timing(), Channels: channels})
	if err != nil {
		t.Fatal(err)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := a.Serve(context.Background(), inR, outW)
		_ = outW.Close()
		done <- err
	}()
	return inW, outR, done
}

// Over standard input and output, a tools/call whose arguments the tool's
// schema refuses is answered -32602 with its own id, every other mistake
// -32603, a good call normally, and a notification not at all.
func TestStdioAnswersSchemaMistakesWithInvalidParams(t *testing.T) {
	inW, outR, served := serveStdio(t, false)
	dec := json.NewDecoder(outR)
	call := func(line string) rpcResponse {
		t.Helper()
		if _, err := io.WriteString(inW, line+"\n"); err != nil {
			t.Fatal(err)
		}
		var r rpcResponse
		if err := dec.Decode(&r); err != nil {
			t.Fatalf("reading the answer to %s: %v", line, err)
		}
		return r
	}
	call(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	if _, err := io.WriteString(inW, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"); err != nil {
		t.Fatal(err)
	}

	r := call(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"receive_messages","arguments":{"limit":0}}}`)
	if string(r.ID) != "2" || r.Error == nil || r.Error.Code != -32602 || !strings.HasPrefix(r.Error.Message, "invalid params: receive_messages: limit: ") {
		t.Errorf("limit 0: %+v, want error -32602 about the limit for id 2", r)
	}
	r = call(`{"jsonrpc":"2.0","id":"three","method":"tools/call","params":{"name":"receive_messages","arguments":{"limit":1}}}`)
	if string(r.ID) != `"three"` || r.Result == nil || len(r.Result.Content) != 1 || !strings.HasPrefix(r.Result.Content[0].Text, "No unread messages") {
		t.Errorf("limit 1: %+v, want the empty fetch for id \"three\"", r)
	}
	r = call(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"send_message","arguments":{"to":"nobody","text":"x"}}}`)
	if r.Error == nil || r.Error.Code != -32603 || !strings.Contains(r.Error.Message, `invalid params: unknown peer "nobody"`) {
		t.Errorf("unknown peer: %+v, want error -32603 naming the peer", r)
	}
	// A notification gets no answer, whatever its arguments: the next
	// answer is the ping's.
	if _, err := io.WriteString(inW, `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"receive_messages","arguments":{"limit":0}}}`+"\n"); err != nil {
		t.Fatal(err)
	}
	if r = call(`{"jsonrpc":"2.0","id":5,"method":"ping"}`); string(r.ID) != "5" || r.Error != nil {
		t.Errorf("after a notification: %+v, want the answer to ping 5", r)
	}

	if err := inW.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-served; err != nil {
		t.Errorf("Serve after the end of input = %v", err)
	}
}

// Over standard input and output, a server sending Claude channel
// notifications offers in server/discover only the MCP revisions that open
// with the initialize handshake: on a connection of a later revision a
// host has no path for a notification it did not ask for, and drops it.
// Without channels every revision is offered.
func TestStdioChannelsOfferOnlyHandshakeRevisions(t *testing.T) {
	const modern = "2026-07-28" // the first revision without the handshake
	for _, channels := range []bool{true, false} {
		inW, outR, served := serveStdio(t, channels)
		if _, err := io.WriteString(inW, `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}`+"\n"); err != nil {
			t.Fatal(err)
		}
		line, err := bufio.NewReader(outR).ReadBytes('\n')
		if err != nil {
			t.Fatalf("channels %v: reading the answer to server/discover: %v", channels, err)
		}
		var r struct {
			Result struct {
				SupportedVersions []string `json:"supportedVersions"`
				Capabilities      struct {
					Experimental map[string]any `json:"experimental"`
				} `json:"capabilities"`
			} `json:"result"`
		}
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatalf("channels %v: answer %s: %v", channels, line, err)
		}
		versions := r.Result.SupportedVersions
		if len(versions) == 0 || r.Result.Capabilities.Experimental["claude/channel"] == nil {
			t.Errorf("channels %v: server/discover = %s, want versions and the claude/channel capability", channels, line)
		}
		for _, v := range versions {
			if channels && v >= modern {
				t.Errorf("channels on: server/discover offers %s among %v, want only revisions before %s", v, versions, modern)
			}
		}
		if channels && !slices.Contains(versions, "2025-11-25") {
			t.Errorf("channels on: server/discover offers %v, want 2025-11-25 among them", versions)
		}
		if !channels && !slices.Contains(versions, modern) {
			t.Errorf("channels off: server/discover offers %v, want %s among them", versions, modern)
		}
		_ = inW.Close()
		if err := <-served; err != nil {
			t.Errorf("channels %v: Serve: %v", channels, err)
		}
	}
}
