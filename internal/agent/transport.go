package agent

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"sync"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/interlink-go/interlink/internal/agent/tools"
)

// The two ways to reach the agent's MCP server, standard input and output
// ([Agent.Serve]) and a client in the same process ([Agent.Client]), both
// check the arguments of a tools/call request against the tool's schema
// before mcp-go sees it, and answer arguments that do not fit with the
// JSON-RPC error -32602 (see [tools.Checker] for why in front of mcp-go).

// Serve runs the agent as an MCP server on the given streams until the
// client closes its input or ctx ends, then stops it.
//
// Lines from in pass a screen on their way to mcp-go's stdio server: a
// tools/call request whose arguments do not fit is answered on out right
// there; every other line goes on unchanged. The screen ends when in ends,
// or, once the server stopped, at the next line it reads; like mcp-go's own
// reader, a read still blocked on in when Serve returns ends only with in.
func (a *Agent) Serve(ctx context.Context, in io.Reader, out io.Writer) error {
	if err := a.Start(ctx); err != nil {
		return err
	}
	defer a.Stop()
	w := &messageWriter{w: out}
	pr, pw := io.Pipe()
	defer pr.Close()
	go screen(a.checker, in, pw, w, a.log)
	s := server.NewStdioServer(a.mcp)
	s.SetErrorLogger(slog.NewLogLogger(a.log.Handler(), slog.LevelWarn))
	if a.cfg.Channels {
		// Channel notifications are unsolicited: they need a connection
		// of a revision that still has the initialize handshake, and a
		// host takes them on no other.
		s.SetContextFunc(func(ctx context.Context) context.Context {
			return server.WithSupportedProtocolVersions(ctx, legacyProtocolVersions())
		})
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	err := s.Listen(ctx, pr, w)
	if err != nil && ctx.Err() != nil {
		return nil // ended by a signal
	}
	return err
}

// legacyProtocolVersions returns the MCP revisions mcp-go serves that
// still open with the initialize handshake, newest first.
func legacyProtocolVersions() []string {
	var legacy []string
	for _, v := range mcp.ValidProtocolVersions {
		if !mcp.IsModernProtocol(v) {
			legacy = append(legacy, v)
		}
	}
	return legacy
}

// screen copies in to next line by line, except the tools/call requests
// whose arguments checker refuses, which it answers on out. It closes next
// when in ends, so the server sees the end of its input.
func screen(checker *tools.Checker, in io.Reader, next *io.PipeWriter, out io.Writer, log *slog.Logger) {
	r := bufio.NewReader(in)
	for {
		line, err := r.ReadBytes('\n')
		if len(line) > 0 {
			if resp := refusal(checker, line); resp != nil {
				if _, werr := out.Write(resp); werr != nil {
					log.Warn("answer to a call with bad arguments not written", "err", werr)
				}
			} else if _, werr := next.Write(line); werr != nil {
				return // the server stopped reading
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = nil
			}
			next.CloseWithError(err)
			return
		}
	}
}

// refusal returns the JSON-RPC error response, with its newline, to line
// when it is a tools/call request whose arguments checker refuses; nil
// otherwise, for the server to handle.
func refusal(checker *tools.Checker, line []byte) []byte {
	var req struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if json.Unmarshal(line, &req) != nil || req.Method != string(mcp.MethodToolsCall) || len(req.ID) == 0 || string(req.ID) == "null" {
		return nil
	}
	ae := checkCall(checker, req.Params)
	if ae == nil {
		return nil
	}
	type rpcError struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}
	resp, err := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   rpcError        `json:"error"`
	}{mcp.JSONRPC_VERSION, req.ID, rpcError{ae.Code(), ae.Error()}})
	if err != nil {
		return nil // the id came from valid JSON; let the server answer
	}
	return append(resp, '\n')
}

// checkCall checks the params of a tools/call request: a name and the
// arguments. Params it cannot read are left to the server.
func checkCall(checker *tools.Checker, params json.RawMessage) *tools.ArgumentsError {
	var p struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	if json.Unmarshal(params, &p) != nil {
		return nil
	}
	ae, _ := errors.AsType[*tools.ArgumentsError](checker.Check(p.Name, p.Arguments))
	return ae
}

// messageWriter writes whole messages to w, one Write at a time, for the
// screen and the server that share it.
type messageWriter struct {
	mu sync.Mutex
	w  io.Writer // guarded by mu
}

func (m *messageWriter) Write(p []byte) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.w.Write(p)
}

// Client returns an MCP client of the agent in this process, for tests and
// the demo. Its tool calls pass the same check of their arguments as calls
// over standard input. The caller starts it, initializes it and closes it.
func (a *Agent) Client() *client.Client {
	return client.NewClient(&checkedTransport{InProcessTransport: transport.NewInProcessTransport(a.mcp), checker: a.checker})
}

// checkedTransport is mcp-go's in-process transport with the check of
// tools/call arguments in front.
type checkedTransport struct {
	*transport.InProcessTransport
	checker *tools.Checker
}

// SendRequest answers a tools/call request whose arguments do not fit with
// -32602 and passes everything else to the server.
func (t *checkedTransport) SendRequest(ctx context.Context, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	if req.Method == string(mcp.MethodToolsCall) {
		params, err := json.Marshal(req.Params)
		if err == nil {
			if ae := checkCall(t.checker, params); ae != nil {
				return transport.NewJSONRPCErrorResponse(req.ID, ae.Code(), ae.Error(), nil), nil
			}
		}
	}
	return t.InProcessTransport.SendRequest(ctx, req)
}
