package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/interlink-go/interlink/internal/agent/session"
	"github.com/interlink-go/interlink/internal/agent/tools"
	"github.com/interlink-go/interlink/internal/e2e"
	"github.com/interlink-go/interlink/internal/gate"
	"github.com/interlink-go/interlink/internal/host"
	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/inbound"
	"github.com/interlink-go/interlink/internal/policy"
	"github.com/interlink-go/interlink/internal/presence"
	"github.com/interlink-go/interlink/internal/relay"
	"github.com/interlink-go/interlink/internal/route"
	"github.com/interlink-go/interlink/internal/runlock"
	"github.com/interlink-go/interlink/internal/seal"
	"github.com/interlink-go/interlink/internal/sealcap"
)

// Agent is one session's interlink agent. It wires the parts together and
// owns their lifecycle; it does nothing itself. Create it with [New], run
// it with [Agent.Serve] or [Agent.Start] and [Agent.Stop].
type Agent struct {
	// Fixed at creation.
	cfg     Config // Timing with its defaults
	log     *slog.Logger
	signer  *identity.Signer
	name    string // claimed on the roster
	peers   *policy.Store
	relays  []*relay.Client
	gate    *gate.Gate      // one for every relay loop
	sticky  *inbound.Sticky // one for every relay loop
	knocks  *inbound.Knocks // one for every relay loop
	sealing *sealcap.Store  // which keys accept sealed messages
	opener  *seal.Recipient // opens sealed messages to this identity
	binding *session.Binding
	client  *clientLink
	mcp     *server.MCPServer
	checker *tools.Checker

	// stopping is closed when Stop begins, stopDone when it has finished.
	stopping chan struct{}
	stopDone chan struct{}
	workers  sync.WaitGroup // every goroutine Stop waits for

	mu      sync.Mutex
	stop    context.CancelFunc // cancels the workers; nil before Start; guarded by mu
	stopped bool               // Stop has begun; guarded by mu

	readersMu   sync.Mutex
	lastReaders []identity.PublicKey // the peers last read; guarded by readersMu
}

// readers returns the keys of peers.json, the readers of the session's
// details on relays that serve the roster per requester. It is read anew
// for each announcement, so a peer added or removed is in the next one
// (within the announcement interval); while the file cannot be read, the
// last list read stands.
func (a *Agent) readers() []identity.PublicKey {
	a.readersMu.Lock()
	defer a.readersMu.Unlock()
	p, err := a.peers.Load()
	if err != nil {
		a.log.Warn("peers file unreadable; announcing the readers read before", "err", err)
		return a.lastReaders
	}
	keys := make([]identity.PublicKey, 0, p.Len())
	for _, e := range p.Entries() {
		keys = append(keys, e.Key)
	}
	if len(keys) > identity.MaxReaders && len(a.lastReaders) <= identity.MaxReaders {
		a.log.Warn("more peers than an announcement names as readers; the first by petname are named",
			"peers", len(keys), "named", identity.MaxReaders)
	}
	a.lastReaders = keys
	return keys
}

// New opens everything the agent needs, in the order of its startup: the
// key, the peer policy (which must parse), the relay clients and, for a
// Claude session, the session's files. It starts nothing. A setting it
// cannot use is a [*SettingError].
func New(cfg Config) (*Agent, error) {
	if cfg.Host == "" {
		cfg.Host = host.Claude
	}
	if _, err := host.Parse(string(cfg.Host)); err != nil {
		return nil, fmt.Errorf("host %q: %w", cfg.Host, err)
	}
	if cfg.Host == host.Claude {
		if err := route.ValidateSession(cfg.Session); err != nil {
			return nil, fmt.Errorf("session id: %w", err)
		}
	}
	cfg.Timing = cfg.Timing.withDefaults()
	t := &cfg.Timing
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
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
		signer:   signer,
		name:     cfg.Name,
		peers:    peers,
		gate:     gate.New(signer.Public(), &gate.Options{Now: t.Now}),
		sticky:   inbound.NewSticky(),
		knocks:   inbound.NewKnocks(&inbound.KnockOptions{Now: t.Now}),
		stopping: make(chan struct{}),
		stopDone: make(chan struct{}),
	}
	if a.sealing, err = sealcap.Open(cfg.StateRoot, signer.Public(), t.Now); err != nil {
		return nil, fmt.Errorf("local state: %w", err)
	}
	seed := signer.Seed()
	a.opener, err = seal.NewRecipient(seed)
	clear(seed)
	if err != nil {
		return nil, &SettingError{Setting: "key file", Flag: "--key", Env: "INTERLINK_KEY", Err: err}
	}
	if strings.TrimSpace(a.name) == "" {
		a.name = signer.Public().Fingerprint()
	}
	for _, u := range urls {
		a.relays = append(a.relays, relay.New(u, &relay.Options{HTTPClient: t.HTTPClient, Logger: log, Signer: signer}))
	}
	a.binding = session.NewBinding(session.Config{
		StateRoot: cfg.StateRoot, Signer: signer, Relays: a.relays, Name: a.name, Cwd: cfg.Cwd,
		Sink: a.sink, Wake: cfg.WakeBudget, Send: cfg.SendBudget,
		Now: t.Now, Announce: t.Announce, Retry: t.Retry, LockRetry: t.LockRetry, Logger: log,
		Sealing: a.sealing, Readers: a.readers, Discoverable: !cfg.Hidden,
		Receipts: !cfg.NoReceipts, LearnCaps: a.learnCaps, ReceiptWindow: t.ReceiptWindow,
	})
	if a.mcp, a.checker, err = a.newServer(); err != nil {
		return nil, err
	}
	a.client = &clientLink{srv: a.mcp}
	if cfg.Host == host.Claude {
		if _, _, err := a.binding.Bind(cfg.Session); err != nil {
			return nil, fmt.Errorf("local state: %w", err)
		}
	}
	return a, nil
}

// Session returns the session id, or "" while a Codex agent is unbound.
func (a *Agent) Session() string {
	if s := a.binding.Session(); s != nil {
		return s.ID
	}
	return ""
}

// Route returns the session's own route, key#session, or the zero Route
// while a Codex agent is unbound.
func (a *Agent) Route() route.Route {
	if s := a.binding.Session(); s != nil {
		return s.Route
	}
	return route.Route{}
}

// Tools returns the tools as tools/list shows them, by name.
func (a *Agent) Tools() map[string]mcp.Tool {
	out := map[string]mcp.Tool{}
	for name, t := range a.mcp.ListTools() {
		out[name] = t.Tool
	}
	return out
}

// Start starts the background workers, once: at once the ones that need no
// session, the rest as soon as the session is bound (see startWorkers).
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
	a.workers.Go(func() {
		select {
		case <-wctx.Done():
		case <-a.binding.Ready():
			a.startWorkers(wctx, a.binding.Session())
		}
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

// startWorkers starts the workers of the bound session s: the outbox
// (which sends pairing messages too), presence, one inbound loop per relay
// and, with a sink, the notifier.
func (a *Agent) startWorkers(ctx context.Context, s *session.Session) {
	t := &a.cfg.Timing
	host := &notifier{mailbox: s.Mailbox, sink: s.Sink, every: t.Notify, retry: t.LockRetry, log: a.log,
		budget: s.Budget, petname: petnames(a.peers, a.signer.Public()), receipts: s.Receipts}
	var stored func(*gate.Decision)
	var receipt func(context.Context, *gate.Decision) (map[string]int, error)
	if s.Receipts != nil {
		stored = s.Receipts.Stored
		receipt = func(ctx context.Context, d *gate.Decision) (map[string]int, error) { return a.receipt(ctx, s, d) }
		a.workers.Go(func() { s.Receipts.Run(ctx) })
	}
	a.workers.Go(func() {
		if err := s.Outbox.Run(ctx); err != nil {
			a.log.Error("outbox stopped", "err", err)
		}
	})
	a.workers.Go(func() { s.Presence.Run(ctx) })
	a.workers.Go(func() { a.markRunning(ctx, s) })
	for _, r := range a.relays {
		l := inbound.New(inbound.Config{
			Relay:      r,
			Route:      s.Route,
			Own:        a.signer.Public(),
			Gate:       a.gate,
			Peers:      a.peers,
			Mailbox:    s.Mailbox,
			Pairing:    s.Pairing,
			Sticky:     a.sticky,
			Knocks:     a.knocks,
			Notify:     host.pairing,
			Delivered:  func(d *gate.Decision) { a.delivered(s, d) },
			Stored:     stored,
			Receipt:    receipt,
			Dropped:    a.cfg.Dropped,
			Recipient:  a.opener,
			SealedFrom: a.sealedFrom,
			Logger:     a.log,
			PollWait:   t.PollWait,
			RetryDelay: t.RetryDelay,
		})
		a.workers.Go(func() { _ = l.Run(ctx) })
	}
	if s.Sink != nil {
		a.workers.Go(func() { host.run(ctx) })
	}
}

// sealedFrom records that sender, whose sealed message signed at ts the
// gate admitted, accepts sealed messages.
func (a *Agent) sealedFrom(sender identity.PublicKey, ts uint64) {
	ctx, cancel := context.WithTimeout(context.Background(), sealcapTimeout)
	defer cancel()
	if changed, err := a.sealing.Learn(ctx, sender, ts, true); err != nil {
		a.log.Warn("sealed sender not recorded", "sender", sender.Fingerprint(), "err", err)
	} else if changed {
		a.log.Info("peer accepts sealed messages", "sender", sender.Fingerprint())
	}
}

// receipt records the stages an end-to-end receipt d tells of messages
// session s sent, and returns the reasons and counts of the entries it
// dropped (see [e2e.Heard.Apply]). A receipt that verified proves that
// its signer takes receipts.
func (a *Agent) receipt(ctx context.Context, s *session.Session, d *gate.Decision) (map[string]int, error) {
	entries, err := e2e.DecodeBody(d.Message.Text)
	if err != nil {
		return map[string]int{e2e.ReasonMalformed: 1}, nil
	}
	if _, err := a.sealing.LearnReceipts(ctx, d.Sender, d.Message.TS, true); err != nil {
		a.log.Warn("receipt sender not recorded", "sender", d.Sender.Fingerprint(), "err", err)
	}
	return s.Heard.Apply(ctx, d.Sender.String(), d.Petname, d.Message.TS, entries, func(id string) (string, bool, error) {
		e, ok, err := s.Outbox.Status(id)
		if err != nil || !ok || e.Receipt {
			return "", false, err
		}
		return route.Parse(e.Route).Key, true, nil
	})
}

// learnCaps looks key up on the rosters for its signed capabilities and
// records them (see package sealcap).
func (a *Agent) learnCaps(ctx context.Context, key identity.PublicKey) {
	ctx, cancel := context.WithTimeout(ctx, sealcapTimeout)
	defer cancel()
	ros := relay.FetchRosterOf(ctx, a.relays, key)
	for _, e := range ros.Entries {
		if e.Key != key || !e.CapsSigned {
			continue
		}
		if _, err := a.sealing.LearnAnnouncement(ctx, e.Key, e.CapsTS, e.Caps, true); err != nil {
			a.log.Warn("capabilities of a key not recorded", "key", key.Fingerprint(), "err", err)
		}
	}
}

// sealcapTimeout bounds the wait for the capabilities file's lock.
const sealcapTimeout = 5 * time.Second

// markRunning marks this process as a server of session s, with a lock
// file beside the session's mailbox (see [runlock]), until ctx ends, so
// that doctor can tell when two servers share one session id and so its
// mailbox. It warns when another server runs for the session already.
func (a *Agent) markRunning(ctx context.Context, s *session.Session) {
	dir := filepath.Dir(s.Mailbox.Path())
	release, err := runlock.Hold(dir, s.ID)
	if err != nil {
		a.log.Warn("could not mark this server as running; doctor will not see it", "session", s.ID, "err", err)
		return
	}
	defer release()
	if pids, err := runlock.Running(dir, s.ID); err == nil && len(pids) > 1 {
		a.log.Warn("another server runs for this session id and shares its mailbox; give each session its own id",
			"session", s.ID, "pids", fmt.Sprint(pids))
	}
	<-ctx.Done()
}

// delivered applies the progress rules to a message newly committed to the
// mailbox of s.
func (a *Agent) delivered(s *session.Session, d *gate.Decision) {
	m := &d.Message
	if a.cfg.Delivered != nil {
		a.cfg.Delivered(m, d.Petname)
	}
	if m.TaskID == "" {
		return
	}
	if err := s.Progress.Inbound(m.TaskID, m.Status, d.Petname); err != nil {
		a.log.Debug("progress marker", "err", err)
	}
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
	s := a.binding.Session()
	if started && s != nil {
		dctx, dcancel := context.WithTimeout(ctx, DrainTimeout)
		if s.Receipts != nil {
			// Stages noted within the last window go out with the drain.
			s.Receipts.Flush(dctx)
		}
		if n := s.Outbox.Drain(dctx); n > 0 {
			a.log.Info("stopping with messages no relay has taken yet; the next process of this session sends them",
				"count", n, "outbox", s.Outbox.Path())
		}
		dcancel()
	}
	if stop != nil {
		stop()
	}
	a.workers.Wait()
	if !started || s == nil {
		return // never announced, so nothing to take back
	}
	s.Presence.Unregister(ctx)
	if sticky := a.sticky.Snapshot(); len(sticky) > 0 {
		n := s.Presence.Goodbye(ctx, sticky, s.Route, presence.GoodbyeText(s.ID))
		a.log.Debug("goodbyes sent", "peers", len(sticky), "accepted", n)
	}
}
