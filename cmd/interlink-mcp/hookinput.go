package main

import (
	"encoding/json"
	"io"
	"os"
	"strings"
)

// maxHookInput bounds what a hook command reads of its stdin. A prompt
// hook's input holds the whole prompt, which may be a long paste; an input
// cut at the bound does not parse, and then holds neither a session nor a
// prompt.
const maxHookInput = 16 << 20

// hookInput is what a hook command learns from the JSON object a host
// writes on its stdin.
type hookInput struct {
	// terminal is set when stdin is a terminal: a person runs the command
	// by hand, and there is no hook input.
	terminal bool
	// sessionID is the trimmed session_id, "" when there is none.
	sessionID string
	// prompt is the prompt of a prompt hook (UserPromptSubmit) and
	// hasPrompt whether the input holds one, as a string.
	prompt    string
	hasPrompt bool
}

// readHookInput reads the hook input from stdin. Input that is missing,
// too long or not a JSON object gives an empty hookInput.
func readHookInput(stdin io.Reader) hookInput {
	if stdin == nil {
		return hookInput{}
	}
	// Run by hand from a terminal there is no hook input to wait for.
	if f, ok := stdin.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			return hookInput{terminal: true}
		}
	}
	data, err := io.ReadAll(io.LimitReader(stdin, maxHookInput))
	if err != nil {
		return hookInput{}
	}
	var payload struct {
		SessionID any `json:"session_id"`
		Prompt    any `json:"prompt"`
	}
	if json.Unmarshal(data, &payload) != nil {
		return hookInput{}
	}
	var in hookInput
	if s, ok := payload.SessionID.(string); ok {
		in.sessionID = strings.TrimSpace(s)
	}
	in.prompt, in.hasPrompt = payload.Prompt.(string)
	return in
}

// mainSession is the session of a hook command that neither its options
// nor its input name.
func mainSession() string { return "main" }
