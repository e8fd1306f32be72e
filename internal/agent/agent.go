package agent

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/interlink-go/interlink/internal/codex"
	"github.com/interlink-go/interlink/internal/delivery"
	"github.com/interlink-go/interlink/internal/gate"
	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/inbound"
	"github.com/interlink-go/interlink/internal/mailbox"
	"github.com/interlink-go/interlink/internal/outbox"
	"github.com/interlink-go/interlink/internal/pairing"
	"github.com/interlink-go/interlink/internal/policy"
	"github.com/interlink-go/interlink/internal/presence"
	"github.com/interlink-go/interlink/internal/progress"
	"github.com/interlink-go/interlink/internal/relay"
	"github.com/interlink-go/interlink/internal/route"
)

// ServerName is the name the MCP server reports in initialize.
const ServerName = "interlink-mcp"

// Host names the host application the server runs under.
type Host string

// Hosts.
const (
	HostClaude Host = "claude"
	HostCodex  Host = "codex"
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
	// Host is the host application; empty means [HostClaude].
	Host Host
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
	// mailbox, with the sender's petname, before the relay is acknowledged.
	// It must return quickly.
	Delivered func(m *identity.Message, petname string)
	// CodexBin is the codex executable that notices are handed to in the
	// Codex host; empty means notices are not sent.
	CodexBin string
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
	PairRetry  time.Duration // pairing queue pass, default 2 s
	QueuePause time.Duration // between codex queue attempts, default 2 s
	Now        func() time.Time
	HTTPClient *http.Client // nil means the relay package's default
}

// Agent is one session's interlink agent: its MCP server, stores and
// background workers. Create it with [New], run it with [Agent.Serve] or
// [Agent.Start] and [Agent.Stop].
type Agent struct {
	cfg     Config
	log     *slog.Logger
	now     func() time.Time
	signer  *identity.Signer
	own     identity.PublicKey
	session string
	route   route.Route
	name    string

	peers     *policy.Store
	relays    []*relay.Client
	mailbox   *mailbox.Mailbox
	pairing   *pairing.Store
	gate      *gate.Gate
	sticky    *inbound.Sticky
	knocks    *inbound.Knocks
	outbox    *outbox.Outbox
	announcer *presence.Announcer
	progress  *progress.Markers
	mcp       *server.MCPServer
	pairKick  chan struct{} // wakes the pairing worker
	sink      delivery.Sink // nil: no notices
	client    atomic.Value  // string: the MCP client session id, once registered
	failed    *codex.Failed // Codex only: saved failed deliveries

	// ready is closed by bind. The session fields (session, route, mailbox,
	// pairing, progress, announcer, sink, failed) are set before and never
	// change after, so whoever has seen ready closed may read them.
	ready chan struct{}
	// pendingSummary is a summary set before binding; guarded by mu.
	pendingSummary string
	// bindMu serializes bind_codex_session calls.
	bindMu sync.Mutex
	// recoverMu serializes failed_deliveries calls.
	recoverMu sync.Mutex

	// stopping is closed when Stop begins, stopDone when it has finished.
	stopping chan struct{}
	stopDone chan struct{}

	mu      sync.Mutex
	stop    context.CancelFunc // cancels the workers; nil before Start; guarded by mu
	workers sync.WaitGroup
	stopped bool // Stop has begun; guarded by mu
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
		if v = trim(v); v != "" {
			if err := route.ValidateSession(v); err != nil {
				return "", err
			}
			return v, nil
		}
	}
	return route.NewSessionID()
}

// New opens everything the agent needs, in the order of its startup: the
// key, the peer policy (which must parse), the relay clients, the session's
// mailbox and pairing state. It starts nothing.
func New(cfg Config) (*Agent, error) {
	cfg.Host = cmp.Or(cfg.Host, HostClaude)
	if cfg.Host != HostClaude && cfg.Host != HostCodex {
		return nil, fmt.Errorf("host %q: want %q or %q", cfg.Host, HostClaude, HostCodex)
	}
	t := &cfg.Timing
	t.Announce = cmp.Or(t.Announce, presence.DefaultEvery)
	t.Retry = cmp.Or(t.Retry, outbox.DefaultRetryEvery)
	t.PollWait = cmp.Or(t.PollWait, inbound.DefaultPollWait)
	t.RetryDelay = cmp.Or(t.RetryDelay, inbound.DefaultRetryDelay)
	t.Notify = cmp.Or(t.Notify, time.Second)
	t.LockRetry = cmp.Or(t.LockRetry, 2*time.Second)
	t.PairRetry = cmp.Or(t.PairRetry, 2*time.Second)
	if t.Now == nil {
		t.Now = time.Now
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if cfg.Host == HostClaude {
		if err := route.ValidateSession(cfg.Session); err != nil {
			return nil, fmt.Errorf("session id: %w", err)
		}
	}
	signer, err := identity.LoadKeyFile(cfg.KeyPath)
	if err != nil {
		return nil, &SettingError{Setting: "key file", Flag: "--key", Env: "INTERLINK_KEY", Err: err}
	}
	peers, err := policy.Open(cfg.PeersPath)
	if err != nil {
		return nil, &SettingError{Setting: "peers file", Flag: "--peers", Env: "INTERLINK_PEERS", Err: err}
	}
	urls, err := relay.ParseURLs(cfg.URLs)
	if err != nil {
		return nil, &SettingError{Setting: "relay URLs", Flag: "--url", Env: "INTERLINK_URL", Err: err}
	}
	a := &Agent{
		cfg:      cfg,
		log:      log,
		now:      t.Now,
		signer:   signer,
		own:      signer.Public(),
		peers:    peers,
		sticky:   inbound.NewSticky(),
		knocks:   inbound.NewKnocks(&inbound.KnockOptions{Now: t.Now}),
		pairKick: make(chan struct{}, 1),
		ready:    make(chan struct{}),
		stopping: make(chan struct{}),
		stopDone: make(chan struct{}),
	}
	a.name = cfg.Name
	if trim(a.name) == "" {
		a.name = a.own.Fingerprint()
	}
	for _, u := range urls {
		a.relays = append(a.relays, relay.New(u, &relay.Options{HTTPClient: t.HTTPClient, Logger: a.log}))
	}
	a.gate = gate.New(a.own, &gate.Options{Now: t.Now})
	a.mcp = a.newServer()
	if cfg.Host == HostClaude {
		if err := a.bind(cfg.Session); err != nil {
			return nil, err
		}
	}
	return a, nil
}

// bind gives the agent its session: it opens the session's files, builds
// its route, presence and sink, and marks the agent ready, which lets the
// workers start. A Claude agent is bound at creation; a Codex agent when
// its thread is bound. The caller holds no lock; bind is called once.
func (a *Agent) bind(session string) error {
	t := &a.cfg.Timing
	mb, err := mailbox.Open(a.cfg.StateRoot, a.own, session, &mailbox.Options{Now: t.Now, Logger: a.log})
	if err != nil {
		return fmt.Errorf("local state: %w", err)
	}
	ps, err := pairing.Open(a.cfg.StateRoot, a.own, session, &pairing.Options{Logger: a.log})
	if err != nil {
		return fmt.Errorf("local state: %w", err)
	}
	pm, err := progress.Open(a.cfg.StateRoot, session, &progress.Options{Now: t.Now})
	if err != nil {
		return fmt.Errorf("local state: %w", err)
	}
	ob, err := outbox.Open(a.cfg.StateRoot, a.own, session, relay.Senders(a.relays), a.signer,
		&outbox.Options{Now: t.Now, RetryEvery: t.Retry, LockRetry: t.LockRetry, Logger: a.log})
	if err != nil {
		return fmt.Errorf("local state: %w", err)
	}
	info := presence.Describe(session, a.cfg.Cwd)
	ann := presence.New(a.relays, a.signer, a.name, info, &presence.Options{Every: t.Announce, Now: t.Now, Logger: a.log})
	a.mu.Lock()
	summary := a.pendingSummary
	a.mu.Unlock()
	if summary != "" {
		if err := ann.SetSummary(summary); err != nil {
			a.log.Warn("summary not kept", "err", err)
		}
	}
	// Failures an earlier Codex process of this session saved stay
	// readable whatever the host now is; only a thread id can have any.
	var failed *codex.Failed
	if codex.ValidThread(session) == nil {
		if failed, err = codex.OpenFailed(a.cfg.StateRoot, a.own, session); err != nil {
			return fmt.Errorf("local state: %w", err)
		}
	}
	sink := a.cfg.Sink
	switch {
	case a.cfg.Channels:
		sink = delivery.Channel{Send: a.sendToClient}
	case a.cfg.Host == HostCodex && a.cfg.CodexBin != "":
		sink = &delivery.Codex{Bin: a.cfg.CodexBin, Thread: session, Failed: failed, Logger: a.log, Pause: a.cfg.Timing.QueuePause}
	}
	a.failed = failed
	a.session, a.route = session, route.New(a.own.String(), session)
	a.mailbox, a.pairing, a.progress, a.announcer, a.sink, a.outbox = mb, ps, pm, ann, sink, ob
	close(a.ready)
	return nil
}

// isReady reports whether the agent has its session. Once it returns true,
// the session fields may be read without a lock.
func (a *Agent) isReady() bool {
	select {
	case <-a.ready:
		return true
	default:
		return false
	}
}

// errNotBound is the answer of tools that need a session in an unbound
// Codex agent.
func errNotBound() error {
	return invalidf("not bound to this Codex thread yet: enable and trust the Interlink binding hooks (/hooks in Codex), then send a prompt")
}

// requireReady fails with errNotBound until the agent has its session.
func (a *Agent) requireReady() error {
	if !a.isReady() {
		return errNotBound()
	}
	return nil
}

// Session returns the session id.
func (a *Agent) Session() string { return a.session }

// Route returns the session's own route, key#session.
func (a *Agent) Route() route.Route { return a.route }

// MCP returns the MCP server, for in-process clients.
func (a *Agent) MCP() *server.MCPServer { return a.mcp }

// Start starts the background workers: the outbox, presence, one inbound
// loop per relay and, with a sink, the notification loop. It may be called
// once.
//
// The workers run on a context of their own, which only [Agent.Stop]
// cancels. When ctx ends (a signal, say), Start's watcher calls Stop, so a
// cancelled parent goes through the same shutdown as a closed input: the
// outbox drains with its workers still running, then they stop.
func (a *Agent) Start(ctx context.Context) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.stop != nil || a.stopped {
		return errors.New("agent: already started")
	}
	wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	a.stop = cancel
	// Messages already queued (none before binding) go out from the start;
	// everything that needs the session waits until it is bound.
	a.spawn(func() {
		select {
		case <-wctx.Done():
			return
		case <-a.ready:
		}
		a.startWorkers(wctx)
	})
	go func() {
		select {
		case <-ctx.Done():
			a.Stop()
		case <-a.stopping:
		}
	}()
	return nil
}

// startWorkers starts the outbox, presence, the pairing queue, one inbound
// loop per relay and, with a sink, the notification loop.
func (a *Agent) startWorkers(ctx context.Context) {
	a.spawn(func() {
		if err := a.outbox.Run(ctx); err != nil {
			a.log.Error("outbox stopped", "err", err)
		}
	})
	a.spawn(func() { a.announcer.Run(ctx) })
	a.spawn(func() { a.pairingLoop(ctx) })
	for _, r := range a.relays {
		l := inbound.New(inbound.Config{
			Relay:      r,
			Route:      a.route,
			Own:        a.own,
			Gate:       a.gate,
			Peers:      a.peers,
			Mailbox:    a.mailbox,
			Pairing:    a.pairing,
			Sticky:     a.sticky,
			Knocks:     a.knocks,
			Notify:     a.pairingNotice,
			Delivered:  a.delivered,
			Dropped:    a.cfg.Dropped,
			Logger:     a.log,
			PollWait:   a.cfg.Timing.PollWait,
			RetryDelay: a.cfg.Timing.RetryDelay,
		})
		a.spawn(func() { _ = l.Run(ctx) })
	}
	if a.sink != nil {
		a.spawn(func() { a.notifyLoop(ctx) })
	}
}

func (a *Agent) spawn(f func()) {
	a.workers.Add(1)
	go func() {
		defer a.workers.Done()
		f()
	}()
}

// Shutdown bounds.
const (
	// StopTimeout bounds [Agent.Stop] as a whole, whatever the relays and
	// the host sink do.
	StopTimeout = 4500 * time.Millisecond
	// DrainTimeout bounds how long Stop gives pending messages to reach a
	// relay before the workers stop. What is still pending then stays in
	// the outbox file, and the next process of the session sends it.
	DrainTimeout = 3 * time.Second
)

// Stop ends the session in order, within StopTimeout: it gives pending
// messages up to DrainTimeout to reach a relay, with the workers still
// running and retrying often; stops every worker and waits for them (so no
// announcement can follow the unregister); takes the session off the
// relays' rosters; and says goodbye to the sessions that last wrote to
// this one. The last two steps share what is left of the time and ignore
// relay errors. Stop may be called more than once and from several
// goroutines; every call returns once the first has finished.
func (a *Agent) Stop() {
	a.mu.Lock()
	if a.stopped {
		a.mu.Unlock()
		<-a.stopDone
		return
	}
	a.stopped = true
	stop, started := a.stop, a.stop != nil
	close(a.stopping)
	a.mu.Unlock()
	defer close(a.stopDone)

	ctx, cancel := context.WithTimeout(context.Background(), StopTimeout)
	defer cancel()
	if started && a.isReady() {
		dctx, dcancel := context.WithTimeout(ctx, DrainTimeout)
		if n := a.outbox.Drain(dctx); n > 0 {
			a.log.Info("stopping with messages no relay has taken yet; the next process of this session sends them",
				"count", n, "outbox", a.outbox.Path())
		}
		dcancel()
	}
	if stop != nil {
		stop()
	}
	a.workers.Wait()
	if !started || !a.isReady() {
		return // never announced, so nothing to take back
	}
	a.announcer.Unregister(ctx)
	if sticky := a.sticky.Snapshot(); len(sticky) > 0 {
		n := a.announcer.Goodbye(ctx, sticky, a.route, presence.GoodbyeText(a.session))
		a.log.Debug("goodbyes sent", "peers", len(sticky), "accepted", n)
	}
}

// Serve runs the agent as an MCP server on the given streams until the
// client closes its input or ctx ends, then stops it.
func (a *Agent) Serve(ctx context.Context, in io.Reader, out io.Writer) error {
	if err := a.Start(ctx); err != nil {
		return err
	}
	defer a.Stop()
	s := server.NewStdioServer(a.mcp)
	s.SetErrorLogger(slog.NewLogLogger(a.log.Handler(), slog.LevelWarn))
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	err := s.Listen(ctx, in, out)
	if err != nil && ctx.Err() != nil {
		return nil // ended by a signal
	}
	return err
}

// sendToClient writes one notification to the MCP client. It fails until a
// client has connected and initialized.
func (a *Agent) sendToClient(method string, params map[string]any) error {
	id, _ := a.client.Load().(string)
	if id == "" {
		return errors.New("no MCP client connected")
	}
	return a.mcp.SendNotificationToSpecificClient(id, method, params)
}

// delivered applies the progress rules to a newly committed message.
func (a *Agent) delivered(d *gate.Decision) {
	m := &d.Message
	if a.cfg.Delivered != nil {
		a.cfg.Delivered(m, d.Petname)
	}
	if m.TaskID == "" {
		return
	}
	if err := a.progress.Inbound(m.TaskID, m.Status, d.Petname); err != nil {
		a.log.Debug("progress marker", "err", err)
	}
}

// Pairing notice attempts: a notice the sink refuses is tried this many
// times in all, LockRetry apart, then given up (the request stays in the
// pairing file, where list_pair_requests finds it).
const pairingNoticeAttempts = 3

// pairingNotice hands a pairing notice to the host: the full-text path,
// tried up to pairingNoticeAttempts times while ctx lives.
func (a *Agent) pairingNotice(ctx context.Context, n inbound.Notice) error {
	if a.sink == nil {
		a.log.Info("pairing notice not shown: no host sink", "kind", n.Kind, "msg_id", n.MsgID)
		return nil
	}
	rec := delivery.Record{Sender: n.Sender, MsgID: n.MsgID, Content: n.Text}
	var err error
	for attempt := 1; attempt <= pairingNoticeAttempts; attempt++ {
		if err = a.sink.Text(ctx, rec); err == nil {
			return nil
		}
		if attempt == pairingNoticeAttempts {
			break
		}
		a.log.Warn("pairing notice not delivered; will retry", "attempt", attempt, "err", err)
		if !sleep(ctx, a.cfg.Timing.LockRetry) {
			break
		}
	}
	return fmt.Errorf("pairing notice %s not delivered: %w", n.MsgID, err)
}
