package inbound

import (
	"cmp"
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/interlink-go/interlink/internal/gate"
	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/mailbox"
	"github.com/interlink-go/interlink/internal/pairing"
	"github.com/interlink-go/interlink/internal/policy"
	"github.com/interlink-go/interlink/internal/relay"
	"github.com/interlink-go/interlink/internal/route"
	"github.com/interlink-go/interlink/internal/seal"
)

// Defaults of [Config].
const (
	// DefaultPollWait is how long one long-poll waits for a message.
	DefaultPollWait = 25 * time.Second
	// DefaultRetryDelay is the pause after a failed poll or a failed local
	// commit before the relay is asked again.
	DefaultRetryDelay = 2 * time.Second
)

// warnEvery is how many failures in a row to keep a message share one
// warning; at the default delay, one a minute.
const warnEvery = 30

// Config holds what a [Loop] works with. Relay, Gate, Peers, Mailbox,
// Pairing and Sticky must be set; the rest have defaults.
type Config struct {
	// Relay is the one relay this loop polls.
	Relay *relay.Client
	// Route is the own route, key#session, whose queue is polled.
	Route route.Route
	// Own is the own identity's key.
	Own identity.PublicKey
	// Gate makes the trust decisions. One gate serves every relay loop of
	// the process, so its replay set sees what each of them admitted.
	Gate *gate.Gate
	// Peers is peers.json; it is read again for every message.
	Peers *policy.Store
	// Mailbox receives the delivered messages.
	Mailbox *mailbox.Mailbox
	// Pairing holds this session's pairing state.
	Pairing *pairing.Store
	// Sticky is the reply stickiness shared by every relay loop.
	Sticky *Sticky
	// Knocks limits the rate of pairing requests. One should serve every
	// relay loop of the process; nil means a limiter of this loop's own.
	Knocks *Knocks
	// Notify hands a pairing notice to the host. It must not block for
	// long and must return when ctx ends: the relay is acknowledged after
	// it returns. An error is logged; the pairing state is already saved,
	// so the operator still finds the request with list_pair_requests.
	// Nil drops notices.
	Notify func(ctx context.Context, n Notice) error
	// Delivered, if set, is called after a message was newly committed to
	// the mailbox (not for a duplicate), with the gate's decision. It runs
	// before the relay is acknowledged and must not block for long.
	Delivered func(d *gate.Decision)
	// Stored, if set, is called after a message was committed to the
	// mailbox, a copy it already had included, with the gate's decision,
	// before the relay is acknowledged (end-to-end receipts note it; see
	// package e2e). It must not block for long.
	Stored func(d *gate.Decision)
	// Receipt, if set, handles an admitted end-to-end receipt (package
	// e2e) and returns the reasons and counts of its entries it dropped;
	// an error leaves the receipt on the relay. Nil drops receipts with
	// reason "unexpected". Receipts never reach the mailbox.
	Receipt func(ctx context.Context, d *gate.Decision) (map[string]int, error)
	// Dropped, if set, is called for every message the gate rejects, with
	// the reason as logged (see [gate.Reason]), for payloads that are
	// not messages, with reason "undecodable" and a zero message, and for
	// a message over its sender's share of the mailbox, with reason
	// "over_share".
	Dropped func(m *identity.Message, reason string)
	// Recipient opens sealed messages addressed to the own identity; nil
	// drops them as undecodable, as the original does.
	Recipient *seal.Recipient
	// SealedFrom, if set, is called for every sealed message the gate
	// admitted, with its authenticated sender and signing time: proof
	// that the sender accepts sealed messages (see package sealcap). It
	// must not block for long.
	SealedFrom func(sender identity.PublicKey, ts uint64)
	// Logger receives events; nil discards them.
	Logger *slog.Logger
	// PollWait is how long one long-poll waits; zero means
	// [DefaultPollWait].
	PollWait time.Duration
	// RetryDelay is the pause after a failure; zero means
	// [DefaultRetryDelay].
	RetryDelay time.Duration
}

// Loop moves messages from one relay into the local stores. Create it with
// [New]. Run it at most once at a time; [Loop.Handle] may be called on its
// own, for instance in tests.
type Loop struct {
	cfg Config // fixed at creation, defaults filled in
	log *slog.Logger

	// mu serializes Handle, and with it guards pending. It is held across
	// the local commit (file I/O) on purpose: two steps for the same relay
	// must not interleave. Nothing else takes it.
	mu sync.Mutex
	// pending is the admitted message whose commit failed, or nil; guarded
	// by mu. See the package documentation.
	pending *pendingCommit
}

// New returns a loop for cfg.
func New(cfg Config) *Loop {
	cfg.PollWait = cmp.Or(cfg.PollWait, DefaultPollWait)
	cfg.RetryDelay = cmp.Or(cfg.RetryDelay, DefaultRetryDelay)
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Notify == nil {
		cfg.Notify = func(context.Context, Notice) error { return nil }
	}
	if cfg.Delivered == nil {
		cfg.Delivered = func(*gate.Decision) {}
	}
	if cfg.Stored == nil {
		cfg.Stored = func(*gate.Decision) {}
	}
	if cfg.Dropped == nil {
		cfg.Dropped = func(*identity.Message, string) {}
	}
	if cfg.SealedFrom == nil {
		cfg.SealedFrom = func(identity.PublicKey, uint64) {}
	}
	if cfg.Knocks == nil {
		cfg.Knocks = NewKnocks(nil)
	}
	return &Loop{
		cfg: cfg,
		log: cfg.Logger.With("relay", cfg.Relay.URL(), "session", cfg.Route.Session),
	}
}

// Run polls the relay until ctx ends, then returns nil.
//
// Each round long-polls the own route for up to [Config.PollWait]. A failed
// poll (the relay is down or answered with an error) is logged only when the
// relay goes from reachable to unreachable, and is retried after
// [Config.RetryDelay]. A message is passed to [Loop.Handle]; when it says so,
// the message is acknowledged, and a failed acknowledgement is only logged:
// the relay hands the message back and the replay checks drop it. When Handle
// fails, Run waits RetryDelay and polls again, and the relay hands back the
// same message. After every poll, Run tells the operator about knocks
// turned away when [Knocks] says a notice is due.
func (l *Loop) Run(ctx context.Context) error {
	own := l.cfg.Route.String()
	online := true
	failing := 0 // messages kept on the relay in a row
	for ctx.Err() == nil {
		d, err := l.cfg.Relay.Recv(ctx, own, l.cfg.PollWait)
		l.reportDropped(ctx)
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			if online {
				l.log.Warn("relay unreachable", "err", err)
				online = false
			}
			l.sleep(ctx)
			continue
		}
		if !online {
			l.log.Info("relay reachable again")
			online = true
		}
		if !d.HasMessage {
			continue
		}
		ack, err := l.Handle(ctx, d)
		if err != nil {
			// A failure repeats every RetryDelay while, say, the mailbox
			// stays full: warn on the first of a run, then on every
			// warnEvery-th, and keep the rest at debug.
			level := slog.LevelDebug
			if failing%warnEvery == 0 {
				level = slog.LevelWarn
			}
			failing++
			l.log.Log(ctx, level, "message kept on the relay; will retry", "err", err)
			l.sleep(ctx)
			continue
		}
		failing = 0
		if ack {
			if err := l.cfg.Relay.Ack(ctx, own, d.Ack); err != nil && ctx.Err() == nil {
				l.log.Warn("ack failed", "err", err)
			}
		}
	}
	return nil
}

// sleep waits RetryDelay or until ctx ends.
func (l *Loop) sleep(ctx context.Context) {
	t := time.NewTimer(l.cfg.RetryDelay)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
