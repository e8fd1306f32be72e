package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// Checker checks the arguments of a tool call against the input schema the
// tool declares in tools/list, before the call reaches its handler, so that
// every mistake a schema can express is caught in one place and answered
// with the JSON-RPC error -32602 (invalid params).
//
// mcp-go can validate arguments itself (server.WithInputSchemaValidation),
// with the same validator, but it answers a failure with a result flagged
// isError, as newer MCP revisions suggest so that a model can correct
// itself. interlink answers every mistake in the arguments with a JSON-RPC
// error, as the original did, so the check runs in front of mcp-go, on the
// JSON-RPC message, where the error code can still be chosen.
//
// A top-level argument that is null counts as absent, as it always has, so
// a client that writes null for an optional argument is not refused.
type Checker struct {
	schemas map[string]*schema // by tool name; fixed at creation
}

// schema is the input schema of one tool, compiled on first use: compiling
// all of them costs about a millisecond and a half, which would lengthen
// the agent's start, while one costs well under a tenth of one.
type schema struct {
	name string
	raw  []byte
	once sync.Once
	s    *jsonschema.Schema // set by once
	err  error              // set by once
}

// compiled returns the compiled schema, compiling it the first time.
func (sc *schema) compiled() (*jsonschema.Schema, error) {
	sc.once.Do(func() {
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(sc.raw))
		if err != nil {
			sc.err = fmt.Errorf("tools: schema of %s: %w", sc.name, err)
			return
		}
		url := "mem:///tools/" + sc.name + ".json"
		comp := jsonschema.NewCompiler()
		if err := comp.AddResource(url, doc); err != nil {
			sc.err = fmt.Errorf("tools: schema of %s: %w", sc.name, err)
			return
		}
		if sc.s, err = comp.Compile(url); err != nil {
			sc.err = fmt.Errorf("tools: schema of %s: %w", sc.name, err)
		}
	})
	return sc.s, sc.err
}

// NewChecker returns the checker of the tools' input schemas. Each schema
// is compiled when its tool is first called; [Checker.Compile] compiles
// them all at once.
func NewChecker(tools []mcp.Tool) (*Checker, error) {
	c := &Checker{schemas: make(map[string]*schema, len(tools))}
	for _, t := range tools {
		raw, err := json.Marshal(t.InputSchema)
		if len(t.RawInputSchema) > 0 {
			raw, err = t.RawInputSchema, nil
		}
		if err != nil {
			return nil, fmt.Errorf("tools: schema of %s: %w", t.Name, err)
		}
		c.schemas[t.Name] = &schema{name: t.Name, raw: raw}
	}
	return c, nil
}

// Compile compiles every schema now and returns the first error, so that a
// test can show that every tool's schema is valid.
func (c *Checker) Compile() error {
	for _, name := range slices.Sorted(maps.Keys(c.schemas)) {
		if _, err := c.schemas[name].compiled(); err != nil {
			return err
		}
	}
	return nil
}

// Check returns an [*ArgumentsError] when args, the arguments of a call of
// the tool name as they arrived (absent, null or JSON), do not fit the
// tool's schema. It returns nil when they fit, and for a tool it does not
// know: the server answers that call itself. A schema that does not compile
// is an error of another type, and the call is left to the server.
func (c *Checker) Check(name string, args json.RawMessage) error {
	sc, ok := c.schemas[name]
	if !ok {
		return nil
	}
	compiled, err := sc.compiled()
	if err != nil {
		return err
	}
	var v any = map[string]any{}
	if len(bytes.TrimSpace(args)) > 0 {
		if v, err = jsonschema.UnmarshalJSON(bytes.NewReader(args)); err != nil {
			return &ArgumentsError{Tool: name, Problems: []string{"arguments are not valid JSON"}}
		}
	}
	switch obj := v.(type) {
	case nil:
		v = map[string]any{}
	case map[string]any:
		for k, x := range obj {
			if x == nil {
				delete(obj, k)
			}
		}
	}
	if err = compiled.Validate(v); err == nil {
		return nil
	}
	ae := &ArgumentsError{Tool: name}
	if ve, ok := errors.AsType[*jsonschema.ValidationError](err); ok {
		ae.Problems = problems(ve)
	}
	if len(ae.Problems) == 0 {
		ae.Problems = []string{err.Error()}
	}
	return ae
}

// problems describes each failed constraint under ve, one line each, as
// "<argument>: <what is wrong>", in a stable order.
func problems(ve *jsonschema.ValidationError) []string {
	if len(ve.Causes) > 0 {
		var out []string
		for _, c := range ve.Causes {
			out = append(out, problems(c)...)
		}
		slices.Sort(out)
		return out
	}
	where := strings.Join(ve.InstanceLocation, "/")
	if where == "" {
		where = "arguments"
	}
	return []string{where + ": " + ve.ErrorKind.LocalizedString(english)}
}

// english prints the validator's messages.
var english = message.NewPrinter(language.English)

// ArgumentsError reports the arguments of a tool call that do not fit the
// tool's schema. Its JSON-RPC error code is -32602.
type ArgumentsError struct {
	// Tool is the tool called.
	Tool string
	// Problems lists what is wrong, one constraint each.
	Problems []string
}

func (e *ArgumentsError) Error() string {
	return "invalid params: " + e.Tool + ": " + strings.Join(e.Problems, "; ")
}

// Code returns the JSON-RPC error code of e, -32602.
func (e *ArgumentsError) Code() int { return mcp.INVALID_PARAMS }
