package tools

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/interlink-go/interlink/internal/agent/session"
)

// Tool is one MCP tool: what tools/list shows of it, whether it needs the
// bound session, and its handler.
type Tool struct {
	// Def is the tool as tools/list shows it: name, description and input
	// schema.
	Def mcp.Tool
	// NeedsSession makes the tool refuse every call with the message of
	// [ErrNotBound] until the agent has its session.
	NeedsSession bool
	call         func(ctx context.Context, req mcp.CallToolRequest) (string, error)
}

// Scope gives a tool group what it uses of the bound session, a value of
// the group's own type: the session's id and route, and the files and
// counters the group's tools read or change, nothing else. It returns nil
// while a Codex agent is not bound to its thread yet.
type Scope[S any] func() *S

// View returns the Scope that gives view(s) once binding has its session
// s, and nil before. The first view made after binding is kept and given
// to every later call; calls racing to make it may each run view, and all
// get the one kept.
func View[S any](binding *session.Binding, view func(s *session.Session) *S) Scope[S] {
	var got atomic.Pointer[S]
	return func() *S {
		if v := got.Load(); v != nil {
			return v
		}
		s := binding.Session()
		if s == nil {
			return nil
		}
		if v := view(s); got.CompareAndSwap(nil, v) {
			return v
		}
		return got.Load()
	}
}

// Fixed returns the Scope that always gives v, for a group whose session
// is known when it is built (tests build groups this way).
func Fixed[S any](v *S) Scope[S] { return func() *S { return v } }

// Handler is the body of a tool of a group whose view of the session is S
// and whose arguments decode into A. It returns the text of the result, or
// an error (see [Register] for how errors reach the client). s is the
// group's view of the bound session; it is nil before binding for a tool
// that works without one.
type Handler[S, A any] func(ctx context.Context, s *S, args A) (string, error)

// Bound returns a tool that needs the bound session: until scope gives the
// group's view of it, the tool answers [ErrNotBound].
func Bound[S, A any](def mcp.Tool, scope Scope[S], h Handler[S, A]) Tool {
	return Tool{Def: def, NeedsSession: true, call: typed(scope, true, h)}
}

// Anytime returns a tool that also works before the session is bound: its
// handler then gets a nil view.
func Anytime[S, A any](def mcp.Tool, scope Scope[S], h Handler[S, A]) Tool {
	return Tool{Def: def, call: typed(scope, false, h)}
}

// typed looks up the group's view of the session, refusing the call when
// the tool needs one and there is none yet, decodes the arguments of the
// call into A with mcp-go's binding, and runs h. The arguments passed
// [Checker.Check] before, so a decoding failure is the tool's schema and A
// disagreeing; it is still answered as a caller mistake rather than
// trusted. (mcp.NewTypedToolHandler would answer it as a result flagged
// isError, which this server never uses for mistakes in the arguments.)
func typed[S, A any](scope Scope[S], needs bool, h Handler[S, A]) func(context.Context, mcp.CallToolRequest) (string, error) {
	return func(ctx context.Context, req mcp.CallToolRequest) (string, error) {
		var s *S
		if scope != nil {
			s = scope()
		}
		if s == nil && needs {
			return "", ErrNotBound
		}
		var args A
		if err := req.BindArguments(&args); err != nil {
			return "", invalidf("arguments do not fit the tool's schema: %v", err)
		}
		return h(ctx, s, args)
	}
}

// Register adds tools to srv. A tool that needs the session is refused
// until its group's scope gives one.
//
// A handler's text becomes a result with one text block. Its errors come in
// two shapes, which hosts tell apart:
//
//   - a JSON-RPC error, for every caller mistake ("invalid params: …") and
//     every local storage failure ("local state: …"). mcp-go sends these
//     with the code -32603; a call whose arguments fail the tool's schema
//     never gets here, since [Checker] answers it with -32602 first;
//   - a result flagged isError, only where the text is still worth reading
//     (discover when no relay answered, a half-done accept_pair).
func Register(srv *server.MCPServer, tools []Tool) {
	for _, t := range tools {
		srv.AddTool(t.Def, func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			ctx = context.WithValue(ctx, byModelKey{}, madeByModel(req.Params.Meta))
			text, err := t.call(ctx, req)
			if tf, ok := errors.AsType[*toolFailure](err); ok {
				return mcp.NewToolResultError(tf.text), nil
			}
			if err != nil {
				return nil, err
			}
			return mcp.NewToolResultText(text), nil
		})
	}
}

// modelCallMeta are the _meta fields with which the host says that the
// model made a tool call. Codex 0.171.0 names the model's function call
// (callId, itemId) and its turn (x-codex-turn-metadata) in every call the
// model makes, and none of them in the calls of its mcp_tool hooks, which
// carry only a progress token and the thread id.
var modelCallMeta = []string{"callId", "itemId", "x-codex-turn-metadata"}

// byModelKey is the context key of whether the model made the tool call.
type byModelKey struct{}

// madeByModel reports whether meta, a tool call's _meta, says that the
// model made the call.
func madeByModel(meta *mcp.Meta) bool {
	if meta == nil {
		return false
	}
	for _, k := range modelCallMeta {
		if _, ok := meta.AdditionalFields[k]; ok {
			return true
		}
	}
	return false
}

// byModel reports whether the tool call being handled in ctx was made by
// the model, as far as the host says so. Only a handler that grants what
// the model must never grant itself asks.
func byModel(ctx context.Context) bool {
	v, _ := ctx.Value(byModelKey{}).(bool)
	return v
}

// ErrNotBound is the answer of a tool that needs the session while a Codex
// agent is not bound to its thread yet.
var ErrNotBound error = &paramError{msg: "not bound to this Codex thread yet: enable and trust the Interlink binding hooks " +
	"(/hooks in Codex), then send a prompt"}

// paramError is a mistake in the call's arguments that the schema cannot
// express: an unknown peer, a receipt that matches nothing.
type paramError struct{ msg string }

func (e *paramError) Error() string { return "invalid params: " + e.msg }

// invalidf returns a paramError.
func invalidf(format string, args ...any) error {
	return &paramError{msg: fmt.Sprintf(format, args...)}
}

// localState wraps a failure to read or write this session's files.
func localState(err error) error { return fmt.Errorf("local state: %w", err) }

// toolFailure is a result flagged isError, with its text.
type toolFailure struct{ text string }

func (e *toolFailure) Error() string { return e.text }

// whole is an integer argument. JSON Schema counts 2.0 as an integer, and
// so does a tool's schema, so whole decodes from any number without a
// fraction; the schema bounds its range. Zero stands for absent, which
// every schema that has one either refuses or gives the same meaning.
type whole int

// UnmarshalJSON decodes a number without a fraction, or null.
func (w *whole) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil || f != math.Trunc(f) || f < math.MinInt32 || f > math.MaxInt32 {
		return fmt.Errorf("%s is not a whole number", b)
	}
	*w = whole(f)
	return nil
}

// or returns w, or def when w is zero (absent).
func (w whole) or(def int) int {
	if w == 0 {
		return def
	}
	return int(w)
}

// none is the arguments of a tool that takes none.
type none struct{}

// trim removes surrounding white space.
func trim(s string) string { return strings.TrimSpace(s) }
