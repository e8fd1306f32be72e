package main

import (
	"encoding/json"
	"io"
	"os"
	"strings"

	"github.com/interlink-go/interlink/internal/route"
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

// hookSessionID returns the session a hook command acts for: the one
// --session (or INTERLINK_SESSION) names, else the session_id of the
// hook's input, which input reads only then, else "main". err says why
// that id is not a valid session.
func (c *cli) hookSessionID(flagValue string, input func() hookInput) (session string, err error) {
	explicit, _ := c.setting(flagValue, "--session", "INTERLINK_SESSION", "")
	session = strings.TrimSpace(explicit)
	if session == "" {
		session = input().sessionID
	}
	if session == "" {
		session = "main"
	}
	return session, route.ValidateSession(session)
}
