package agent

import (
	"cmp"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/interlink-go/interlink/internal/budget"
	"github.com/interlink-go/interlink/internal/delivery"
	"github.com/interlink-go/interlink/internal/host"
	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/inbound"
	"github.com/interlink-go/interlink/internal/outbox"
	"github.com/interlink-go/interlink/internal/presence"
	"github.com/interlink-go/interlink/internal/route"
)

// Config is what [New] needs. Paths and values are already resolved from
// flags and environment; see the cmd/interlink-mcp documentation.
type Config struct {
	// KeyPath is the secret key file.
	KeyPath string
	// PeersPath is peers.json; the file must exist.
	PeersPath string
	// URLs are the relay base URLs, as given (they are checked here).
	URLs []string
	// Name is the name this session claims on the roster; blank means the
	// key's fingerprint.
	Name string
	// Session is the session id; it must pass route.ValidateSession. Use
	// [ResolveSession] to pick it.
	Session string
	// StateRoot holds the mailbox, pairing and task files.
	StateRoot string
	// Cwd is the working directory announced on the roster.
	Cwd string
	// Host is the host application; empty means [host.Claude].
	Host host.Kind
	// Sink receives inbox notices and pairing notices. Nil means notices are
	// not sent: messages wait in the mailbox until the model looks. With
	// Channels set, Sink is ignored.
	Sink delivery.Sink
	// Channels sends notices to the host as Claude channel notifications
	// over the MCP connection itself.
	Channels bool
	// Logger receives the log; nil discards it.
	Logger *slog.Logger
	// Dropped, if set, is told about every inbound message the trust gate
	// rejects, with the reason.
	Dropped func(m *identity.Message, reason string)
	// Delivered, if set, is told about every message newly committed to the
	// mailbox, with the sender's petname, before the relay is acknowledged
	// and after the session the sender wrote from became the one replies
	// go to. It must return quickly.
	Delivered func(m *identity.Message, petname string)
	// CodexBin is the codex executable that notices are handed to in the
	// Codex host; empty means notices are not sent.
	CodexBin string
	// WakeBudget and SendBudget limit, per peer, the automatic wake-ups of
	// the host and the messages sent, until the operator's next turn (see
	// package budget). The zero Limit is off; interlink-mcp passes
	// [budget.DefaultWake] and [budget.DefaultSend] unless told otherwise.
	WakeBudget, SendBudget budget.Limit
	// Hidden keeps the session from strangers on a relay that requires
	// signed requests: only the keys in peers.json (and the session's own
	// key) see it there at all. Otherwise strangers see its name, key and
	// route, never its working folder, git label or summary. Relays that
	// serve the roster to anyone see the session as before either way.
	Hidden bool
	// NoReceipts turns end-to-end receipts off: the session neither
	// announces nor sends nor records them, as the original does.
	NoReceipts bool
	// Timing overrides intervals; the zero value means the defaults.
	Timing Timing
}

// Timing holds the intervals of the background workers. Zero fields mean
// the defaults; tests shorten them.
type Timing struct {
	Announce   time.Duration // presence announcements, default 30 s
	Retry      time.Duration // outbox retry, default 5 s
	PollWait   time.Duration // one long-poll, default 25 s
	RetryDelay time.Duration // after a failed poll or commit, default 2 s
	Notify     time.Duration // notification loop tick, default 1 s
	LockRetry  time.Duration // notifier lock and state retries, default 2 s
	QueuePause time.Duration // between codex queue attempts, default 2 s
	// ReceiptWindow gathers the stages of received messages into one
	// receipt per sender; zero means e2e.DefaultWindow (200 ms).
	ReceiptWindow time.Duration
	Now           func() time.Time
	HTTPClient    *http.Client // nil means the relay package's default
}

// withDefaults returns t with every zero field set to its default.
func (t Timing) withDefaults() Timing {
	t.Announce = cmp.Or(t.Announce, presence.DefaultEvery)
	t.Retry = cmp.Or(t.Retry, outbox.DefaultRetryEvery)
	t.PollWait = cmp.Or(t.PollWait, inbound.DefaultPollWait)
	t.RetryDelay = cmp.Or(t.RetryDelay, inbound.DefaultRetryDelay)
	t.Notify = cmp.Or(t.Notify, time.Second)
	t.LockRetry = cmp.Or(t.LockRetry, 2*time.Second)
	if t.Now == nil {
		t.Now = time.Now
	}
	return t
}

// SettingError reports a setting that [New] could not use: the key file,
// peers.json or the relay URLs. It names the flag and the environment
// variable that give the setting, so a command line can say what to fix.
type SettingError struct {
	// Setting names what was wrong, as a person would: "key file".
	Setting string
	// Flag and Env are the flag and the environment variable that set it.
	Flag, Env string
	// Err is the cause.
	Err error
}

func (e *SettingError) Error() string {
	return fmt.Sprintf("%s (%s / %s): %v", e.Setting, e.Flag, e.Env, e.Err)
}

// Unwrap returns the cause.
func (e *SettingError) Unwrap() error { return e.Err }

// ResolveSession returns the session id: explicit (the --session flag or
// INTERLINK_SESSION) if not blank, else claude (CLAUDE_CODE_SESSION_ID) if not
// blank, else a new random id of 8 hex digits. Values are trimmed. The id
// becomes part of file names, so it must pass route.ValidateSession.
func ResolveSession(explicit, claude string) (string, error) {
	for _, v := range []string{explicit, claude} {
		if v = strings.TrimSpace(v); v != "" {
			if err := route.ValidateSession(v); err != nil {
				return "", err
			}
			return v, nil
		}
	}
	return route.NewSessionID()
}
