package progress

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/paths"
	"github.com/interlink-go/interlink/internal/untrusted"
)

// Settings of the reminder hook.
const (
	// IntervalEnv names the environment variable that sets the reminder
	// interval in whole seconds. Unset or empty means [DefaultInterval];
	// zero, a negative number or anything that is not an integer turns
	// the reminder off.
	IntervalEnv = "INTERLINK_PROGRESS_INTERVAL"
	// DefaultInterval is the reminder interval when [IntervalEnv] is unset.
	DefaultInterval = 60 * time.Second
	// MaxHookInput is the most bytes of hook input [Nudge] reads. Real
	// input is a few hundred bytes; a larger one is refused.
	MaxHookInput = 1 << 20
)

// hookOutput is what the hook prints to add the reminder to the model's
// context after a tool call.
type hookOutput struct {
	HookSpecificOutput hookSpecific `json:"hookSpecificOutput"`
}

type hookSpecific struct {
	HookEventName     string `json:"hookEventName"`
	AdditionalContext string `json:"additionalContext"`
}

// hookInput is the part of the hook input that Nudge uses.
type hookInput struct {
	SessionID string `json:"session_id"`
}

// Nudge is the reminder hook that the host runs after a tool call. It reads
// the hook input (JSON) from stdin, and if the session it names has an open
// task, and neither an update nor a reminder has been written within the
// interval (see [IntervalEnv]), it records the time in last-nudge and
// writes one JSON object, followed by a newline, to stdout:
//
//	{"hookSpecificOutput":{"hookEventName":"PostToolUse","additionalContext":"..."}}
//
// The additional context asks the model to send the peer an update, or the
// outcome if the task is done. Task files live under stateRoot as the
// package documentation describes; getenv looks up [IntervalEnv] (nil
// means [os.Getenv]) and now is the current time.
//
// Nudge writes nothing else to stdout, and nothing at all when it returns
// an error. It does nothing and returns nil when the reminder is turned off,
// when the input is empty or has no session_id (or a blank one), when the
// session has no marker, and when it is not yet time. It returns an error,
// for the caller to log, when the input is too large or is not a JSON object
// with a string session_id ([ErrHookInput]), when the session id fails
// [route.ValidateSession], when the marker is corrupt ([ErrCorrupt]), and
// when a file cannot be read or written. Since the hook must never disturb
// the host, the caller should exit 0 in every case.
func Nudge(stdin io.Reader, stdout io.Writer, stateRoot string, getenv func(string) string, now time.Time) error {
	if getenv == nil {
		getenv = os.Getenv
	}
	interval, ok := parseInterval(getenv(IntervalEnv))
	if !ok {
		return nil
	}
	session, err := readHookInput(stdin)
	if err != nil || session == "" {
		return err
	}
	dir, err := paths.SessionPath(stateRoot, paths.Task, session)
	if err != nil {
		return fmt.Errorf("progress: hook: %w", err)
	}

	task, ok, err := readTask(filepath.Join(dir, markerFile))
	if err != nil || !ok {
		return err
	}
	lastUpdate, ok, err := readStamp(filepath.Join(dir, updateFile))
	if err != nil {
		return err
	}
	if !ok {
		lastUpdate = task.Since
	}
	if now.Sub(lastUpdate) <= interval {
		return nil
	}
	nudgePath := filepath.Join(dir, nudgeFile)
	lastNudge, ok, err := readStamp(nudgePath)
	if err != nil {
		return err
	}
	if ok && now.Sub(lastNudge) <= interval {
		return nil
	}

	out, err := encodeOutput(reminder(task, interval))
	if err != nil {
		return err
	}
	// The reminder is recorded before it is shown: if the record cannot be
	// written, showing it would repeat it after every tool call.
	if err := writeStamp(nudgePath, now); err != nil {
		return err
	}
	if _, err := stdout.Write(out); err != nil {
		return fmt.Errorf("progress: hook: write output: %w", err)
	}
	return nil
}

// parseInterval reads the value of [IntervalEnv]. It reports false when the
// reminder is off.
func parseInterval(s string) (time.Duration, bool) {
	s = strings.TrimSpace(s)
	if s == "" {
		return DefaultInterval, true
	}
	n, err := strconv.ParseInt(s, 10, 64)
	// An interval too long for a Duration could never pass anyway.
	if err != nil || n <= 0 || n > math.MaxInt64/int64(time.Second) {
		return 0, false
	}
	return time.Duration(n) * time.Second, true
}

// readHookInput reads at most [MaxHookInput] bytes of hook input and returns
// the session id it names, or "" when it names none.
func readHookInput(r io.Reader) (string, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxHookInput+1))
	if err != nil {
		return "", fmt.Errorf("progress: hook: read input: %w", err)
	}
	if len(data) > MaxHookInput {
		return "", fmt.Errorf("%w: larger than %d bytes", ErrHookInput, MaxHookInput)
	}
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return "", nil
	}
	if data[0] != '{' {
		return "", fmt.Errorf("%w: not a JSON object", ErrHookInput)
	}
	var in hookInput
	if err := json.Unmarshal(data, &in); err != nil {
		return "", fmt.Errorf("%w: %w", ErrHookInput, err)
	}
	if strings.TrimSpace(in.SessionID) == "" {
		return "", nil
	}
	return in.SessionID, nil
}

// reminder returns the text that asks the model for an update on t. The task
// id and the peer name came from a remote peer: both are cleaned, bounded
// and quoted, so that they cannot break out of the sentence or add lines to
// the model's context. The id keeps up to [untrusted.LabelLimit] bytes, so
// that any realistic id survives intact and can be sent back as it is.
func reminder(t Task, interval time.Duration) string {
	id := untrusted.Quote(untrusted.Label(t.ID))
	peer := untrusted.Quote(untrusted.Name(t.Peer))
	return fmt.Sprintf("Interlink progress check: you are working on task %s for peer %s "+
		"and have not sent them an update for more than %d s. "+
		"Send a short progress note now with "+
		"send_message(to=%s, status=\"update\", task_id=%s, text=...), "+
		"or, if the task is finished, report the outcome with status \"result\" (or \"failed\") instead.",
		id, peer, int64(interval/time.Second), peer, id)
}

// encodeOutput returns the hook output carrying text, with a final newline.
func encodeOutput(text string) ([]byte, error) {
	out, err := identity.Marshal(hookOutput{HookSpecificOutput: hookSpecific{
		HookEventName:     "PostToolUse",
		AdditionalContext: text,
	}})
	if err != nil {
		return nil, fmt.Errorf("progress: hook: encode output: %w", err)
	}
	return append(out, '\n'), nil
}
