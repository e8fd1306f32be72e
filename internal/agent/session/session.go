// Package session holds what an agent has only once it knows its session
// id: the files of the session (mailbox, outbox, pairing state, task
// markers, saved failed deliveries), its route, its presence on the roster
// and the sink through which notices reach its host. [Binding] opens them
// exactly once.
//
// A Claude Code agent knows its id at start and is bound at once. A Codex
// agent learns its id when the thread's hooks call bind_codex_session;
// until then it has no [Session], and everything that needs one waits or
// refuses.
package session

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/interlink-go/interlink/internal/budget"
	"github.com/interlink-go/interlink/internal/codex"
	"github.com/interlink-go/interlink/internal/delivery"
	"github.com/interlink-go/interlink/internal/e2e"
	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/mailbox"
	"github.com/interlink-go/interlink/internal/outbox"
	"github.com/interlink-go/interlink/internal/pairing"
	"github.com/interlink-go/interlink/internal/presence"
	"github.com/interlink-go/interlink/internal/progress"
	"github.com/interlink-go/interlink/internal/relay"
	"github.com/interlink-go/interlink/internal/route"
	"github.com/interlink-go/interlink/internal/sealcap"
)

// Session is the bound session. Its fields are set before the binding is
// ready and never change after, so whoever got it may read them freely.
type Session struct {
	// ID is the session id; Route is key#ID.
	ID    string
	Route route.Route
	// Mailbox holds what this session received.
	Mailbox *mailbox.Mailbox
	// Shown remembers which received messages this process has shown its
	// model; only those can be acknowledged by receipt.
	Shown *mailbox.Shown
	// Outbox holds what this session sends until a relay takes it.
	Outbox *outbox.Outbox
	// Pairing holds the pairing requests; their messages go out through
	// Outbox.
	Pairing *pairing.Store
	// Progress holds the task markers the progress reminder reads.
	Progress *progress.Markers
	// Presence announces the session on the relays' rosters.
	Presence *presence.Announcer
	// Failed holds the notices Codex could not be handed. It is nil unless
	// the id is a Codex thread id: only those can have any, whatever the
	// host of this process.
	Failed *codex.Failed
	// Sink reaches the host; nil means notices are not sent.
	Sink delivery.Sink
	// Budget counts the wake-ups and sends of each peer in the session.
	Budget *budget.Budget
	// Receipts notes the stages of received messages and sends their
	// senders end-to-end receipts; Heard keeps the stages receipts told
	// of sent messages. Both are nil when receipts are off.
	Receipts *e2e.Emitter
	Heard    *e2e.Heard
}

// Config is what opening a session needs besides its id.
type Config struct {
	// StateRoot is the folder of every session file.
	StateRoot string
	// Signer is the identity; its key is the first half of the route.
	Signer *identity.Signer
	// Relays are the buses the session is announced on and sends through.
	Relays []*relay.Client
	// Name is the name claimed on the roster.
	Name string
	// Cwd is the working folder announced on the roster.
	Cwd string
	// Summary is the summary announced from the start; it may be empty.
	Summary string
	// Sink returns the sink for the session id; failed is the session's
	// store of failed deliveries, or nil. A nil Sink, or a nil result,
	// means no notices.
	Sink func(id string, failed *codex.Failed) delivery.Sink
	// Wake and Send are the session's budgets; a zero Limit is off.
	Wake, Send budget.Limit
	// Now is the clock; Announce, Retry and LockRetry are the intervals of
	// the announcer and the outbox (zero means their defaults).
	Now                        func() time.Time
	Announce, Retry, LockRetry time.Duration
	// Sealing, if set, is what the identity knows of which keys accept
	// sealed messages: the session then announces that it accepts them,
	// and its outbox and goodbyes seal to those keys. Nil sends and
	// announces as the original does.
	Sealing *sealcap.Store
	// Receipts turns end-to-end receipts on (package e2e): the session
	// announces that it takes them, sends them to keys that announced the
	// same, and records those it gets. It needs Sealing, which remembers
	// who announced what. LearnCaps, if set, reads the rosters for the
	// signed capabilities of a key nothing is known of.
	Receipts  bool
	LearnCaps func(ctx context.Context, key identity.PublicKey)
	// ReceiptWindow is how long stages are gathered into one receipt;
	// zero means [e2e.DefaultWindow].
	ReceiptWindow time.Duration
	// Readers, if set, returns the keys that may read the session's
	// details on a relay that serves the roster per requester (its
	// peers); each announcement asks it anew. Discoverable lets such a
	// relay show everyone else the session's name, key and route. See
	// [presence.Options].
	Readers      func() []identity.PublicKey
	Discoverable bool
	// Logger receives the log of every part.
	Logger *slog.Logger
}

// Open opens the session id: its mailbox, pairing state, task markers,
// outbox and budgets, and, for a Codex thread id, its failed deliveries. A failure is
// an error of local state: the id was checked before.
func Open(id string, cfg Config) (*Session, error) {
	own := cfg.Signer.Public()
	mb, err := mailbox.Open(cfg.StateRoot, own, id, &mailbox.Options{Now: cfg.Now, Logger: cfg.Logger})
	if err != nil {
		return nil, err
	}
	ps, err := pairing.Open(cfg.StateRoot, own, id, &pairing.Options{Logger: cfg.Logger})
	if err != nil {
		return nil, err
	}
	pm, err := progress.Open(cfg.StateRoot, id, &progress.Options{Now: cfg.Now})
	if err != nil {
		return nil, err
	}
	var sealFn func(*identity.Message, []byte) ([]byte, bool, error)
	var caps []string
	if cfg.Sealing != nil {
		sealFn = func(m *identity.Message, plain []byte) ([]byte, bool, error) {
			return cfg.Sealing.Payload(cfg.Signer, m, plain)
		}
		caps = []string{identity.CapSealed}
		if cfg.Receipts {
			caps = append(caps, identity.CapReceipts)
		}
	}
	ob, err := outbox.Open(cfg.StateRoot, own, id, relay.Senders(cfg.Relays), cfg.Signer,
		&outbox.Options{Now: cfg.Now, RetryEvery: cfg.Retry, LockRetry: cfg.LockRetry, Logger: cfg.Logger, Seal: sealFn})
	if err != nil {
		return nil, err
	}
	// Pairing messages an earlier version queued in the pairing file go
	// out through the outbox like every other message.
	if n, err := ps.MoveQueued(context.Background(), own, ob); err != nil {
		cfg.Logger.Warn("queued pairing messages not moved to the outbox; will retry at the next start", "err", err)
	} else if n > 0 {
		cfg.Logger.Info("queued pairing messages moved to the outbox", "count", n)
	}
	bud, err := budget.Open(cfg.StateRoot, own, id, &budget.Options{Wake: cfg.Wake, Send: cfg.Send, Now: cfg.Now})
	if err != nil {
		return nil, err
	}
	var failed *codex.Failed
	if codex.ValidThread(id) == nil {
		if failed, err = codex.OpenFailed(cfg.StateRoot, own, id); err != nil {
			return nil, err
		}
	}
	ann := presence.New(cfg.Relays, cfg.Signer, cfg.Name, presence.Describe(id, cfg.Cwd),
		&presence.Options{Every: cfg.Announce, Now: cfg.Now, Logger: cfg.Logger, Caps: caps, Seal: sealFn,
			Readers: cfg.Readers, Discoverable: cfg.Discoverable})
	if cfg.Summary != "" {
		if err := ann.SetSummary(cfg.Summary); err != nil {
			cfg.Logger.Warn("summary not kept", "err", err)
		}
	}
	s := &Session{
		ID:       id,
		Route:    route.New(own.String(), id),
		Mailbox:  mb,
		Shown:    mailbox.NewShown(),
		Outbox:   ob,
		Pairing:  ps,
		Progress: pm,
		Presence: ann,
		Failed:   failed,
		Budget:   bud,
	}
	if cfg.Sink != nil {
		s.Sink = cfg.Sink(id, failed)
	}
	if cfg.Receipts && cfg.Sealing != nil {
		owed, err := e2e.OpenOwed(cfg.StateRoot, own, id, cfg.Now)
		if err != nil {
			return nil, err
		}
		if s.Heard, err = e2e.OpenHeard(cfg.StateRoot, own, id, cfg.Now); err != nil {
			return nil, err
		}
		s.Receipts = e2e.NewEmitter(e2e.EmitterConfig{
			Owed: owed, Signer: cfg.Signer, Caps: cfg.Sealing.Receipts, Learn: cfg.LearnCaps,
			Queue: ob.EnqueueReceipt, Live: mb.Records, Window: cfg.ReceiptWindow, Now: cfg.Now, Logger: cfg.Logger,
		})
	}
	return s, nil
}

// Binding gives an agent its session once. It is safe for concurrent use.
type Binding struct {
	cfg Config // fixed at creation; Summary is replaced by summary

	// ready is closed once session is set; session never changes after.
	ready   chan struct{}
	session *Session

	// mu serializes Bind, which opens the session's files while holding
	// it (only another Bind or a SetSummary waits for that), and guards
	// summary.
	mu      sync.Mutex
	summary string // set before binding, announced once bound
}

// NewBinding returns an unbound Binding that opens sessions with cfg.
func NewBinding(cfg Config) *Binding {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Binding{cfg: cfg, ready: make(chan struct{})}
}

// Bind opens the session id and makes it the binding's session. Binding
// again to the same id changes nothing and reports already; another id is
// [ErrOtherSession].
func (b *Binding) Bind(id string) (s *Session, already bool, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if cur := b.Session(); cur != nil {
		if cur.ID == id {
			return cur, true, nil
		}
		return nil, false, fmt.Errorf("%w: bound to %s", ErrOtherSession, cur.ID)
	}
	cfg := b.cfg
	cfg.Summary = b.summary
	if s, err = Open(id, cfg); err != nil {
		return nil, false, err
	}
	b.session = s
	close(b.ready)
	return s, false, nil
}

// ErrOtherSession is the error of [Binding.Bind] for a binding that already
// has another session: a session never moves to another id.
var ErrOtherSession = errors.New("session: already bound to another session")

// Session returns the session, or nil before [Binding.Bind] succeeded.
func (b *Binding) Session() *Session {
	select {
	case <-b.ready:
		return b.session
	default:
		return nil
	}
}

// Ready is closed once the binding has its session.
func (b *Binding) Ready() <-chan struct{} { return b.ready }

// SetSummary sets the summary the session announces: at once when bound,
// else from the moment it is bound. It returns the summary as kept and,
// when the binding had its session, the session's id. Too long a summary
// is [presence.ErrSummaryTooLong], checked the same way in both cases.
func (b *Binding) SetSummary(summary string) (kept, boundID string, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if s := b.Session(); s != nil {
		if err := s.Presence.SetSummary(summary); err != nil {
			return "", "", err
		}
		return s.Presence.Info().Summary, s.ID, nil
	}
	if kept, err = presence.CheckSummary(summary); err != nil {
		return "", "", err
	}
	b.summary = kept
	return kept, "", nil
}
