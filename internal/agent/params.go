package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
)

// Tool failures come in three shapes, and hosts tell them apart:
//
//   - success: one text block;
//   - a tool-level failure (isError true, one text block), used only where a
//     result is still useful to read (discover with no relay answering);
//   - a JSON-RPC error, for every caller mistake ([invalidf]) and every
//     local storage failure ([localState]). The message says which it is.
//
// mcp-go reports every handler error with the JSON-RPC code -32603; the
// message text carries the distinction.

// paramError is a mistake in the call's arguments.
type paramError struct{ msg string }

func (e *paramError) Error() string { return "invalid params: " + e.msg }

// invalidf returns a paramError.
func invalidf(format string, args ...any) error {
	return &paramError{msg: fmt.Sprintf(format, args...)}
}

// localState wraps a storage failure.
func localState(err error) error { return fmt.Errorf("local state: %w", err) }

// args are the arguments of one tool call.
type args map[string]any

// str returns the string argument name; absent or null is "". A required
// argument must be present and a string.
func (a args) str(name string, required bool) (string, error) {
	v, ok := a[name]
	if !ok || v == nil {
		if required {
			return "", invalidf("%s is required", name)
		}
		return "", nil
	}
	s, ok := v.(string)
	if !ok {
		return "", invalidf("%s must be a string", name)
	}
	return s, nil
}

// boolean returns the boolean argument name, or def when absent or null.
func (a args) boolean(name string, def bool) (bool, error) {
	v, ok := a[name]
	if !ok || v == nil {
		return def, nil
	}
	b, ok := v.(bool)
	if !ok {
		return false, invalidf("%s must be true or false", name)
	}
	return b, nil
}

// limit reads the limit argument of the fetching tools: 1 to 100, default
// 20.
func (a args) limit() (int, error) {
	v, ok := a["limit"]
	if !ok || v == nil {
		return 20, nil
	}
	f, ok := v.(float64)
	if !ok || f != math.Trunc(f) || f < 1 || f > 100 {
		return 0, invalidf("limit must be an integer from 1 to 100")
	}
	return int(f), nil
}

// handler is the body of a tool: text on success, or an error.
type handler func(ctx context.Context, a args) (string, error)

// wrap adapts h to mcp-go.
func wrap(h handler) func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		a, err := toolArgs(req)
		if err != nil {
			return nil, err
		}
		text, err := h(ctx, a)
		var te *toolFailure
		if errors.As(err, &te) {
			return mcp.NewToolResultError(te.text), nil
		}
		if err != nil {
			return nil, err
		}
		return mcp.NewToolResultText(text), nil
	}
}

// toolArgs returns the arguments of req: absent and null mean none; anything
// but an object is a caller mistake.
func toolArgs(req mcp.CallToolRequest) (args, error) {
	var v any = req.Params.Arguments
	if raw := req.Params.RawArguments; len(raw) > 0 {
		dec := json.NewDecoder(bytes.NewReader(raw))
		if err := dec.Decode(&v); err != nil {
			return nil, invalidf("arguments are not valid JSON")
		}
	}
	switch v := v.(type) {
	case nil:
		return args{}, nil
	case map[string]any:
		return v, nil
	}
	return nil, invalidf("arguments must be an object")
}

// toolFailure is a tool-level failure: a result with isError set.
type toolFailure struct{ text string }

func (e *toolFailure) Error() string { return e.text }

// trim removes surrounding white space.
func trim(s string) string { return strings.TrimSpace(s) }
