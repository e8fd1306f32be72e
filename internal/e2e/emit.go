package e2e

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/interlink-go/interlink/internal/gate"
	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/mailbox"
)

// DefaultWindow is how long an emitter gathers stages before it queues
// them: stages of one sender within it share one receipt.
const DefaultWindow = 200 * time.Millisecond

// Capabilities says what is known of a key's support for receipts
// (package sealcap): yes, and whether anything is known at all.
type Capabilities func(key identity.PublicKey) (yes, known bool, err error)

// Queue queues a signed receipt for route (the outbox's EnqueueReceipt).
type Queue func(ctx context.Context, route string, m identity.Message) error

// EmitterConfig is what an [Emitter] works with; Owed, Signer, Caps,
// Queue and Live must be set.
type EmitterConfig struct {
	Owed   *Owed
	Signer *identity.Signer
	Caps   Capabilities
	// Learn, if set, looks up the signed capabilities of a key nothing is
	// known of (its announcement on the rosters); it is called at most once
	// per key by one emitter, from a flush.
	Learn func(ctx context.Context, key identity.PublicKey)
	Queue Queue
	// Live returns the records of the mailbox (the mailbox's Records).
	// Each unread one from a key that takes receipts is owed its stored
	// stage, and the owed file forgets the others once their stages went
	// (see [FlushOptions]). Nil owes no stored stage.
	Live func() ([]mailbox.Record, error)
	// Window is the gathering time; zero means [DefaultWindow].
	Window time.Duration
	Now    func() time.Time
	Logger *slog.Logger
}

// Emitter notes the stages of received messages in the owed file and
// sends receipts for them from [Emitter.Run], gathered per sender within
// the window. It is safe for concurrent use.
type Emitter struct {
	cfg  EmitterConfig
	kick chan struct{}

	mu      sync.Mutex
	learned map[identity.PublicKey]bool // keys Learn was called for; guarded by mu
	// routes holds where receipts about the messages stored lately go,
	// for a stage noted before a flush saw the message; guarded by mu.
	routes     map[mailbox.Receipt]string
	routeOrder []mailbox.Receipt // oldest first; guarded by mu
}

// maxRoutes bounds Emitter.routes.
const maxRoutes = 4096

// NewEmitter returns an emitter for cfg.
func NewEmitter(cfg EmitterConfig) *Emitter {
	if cfg.Window <= 0 {
		cfg.Window = DefaultWindow
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Emitter{cfg: cfg, kick: make(chan struct{}, 1), learned: map[identity.PublicKey]bool{},
		routes: map[mailbox.Receipt]string{}}
}

// noteTimeout bounds the wait for the owed file's lock.
const noteTimeout = 5 * time.Second

func (e *Emitter) wake() {
	select {
	case e.kick <- struct{}{}:
	default:
	}
}

// Stored tells the emitter that the admitted message of d was committed
// to the mailbox. It writes nothing: the mailbox's record is what the
// next flush notes the stored stage from ([FlushOptions.Stored]), so the
// stage costs the commit nothing and survives any crash. Only ordinary
// messages are receipted.
func (e *Emitter) Stored(d *gate.Decision) {
	m := &d.Message
	if m.Kind != "" && m.Kind != identity.KindMessage {
		return
	}
	rc := mailbox.Receipt{Sender: d.Sender.String(), MsgID: m.MsgID}
	e.mu.Lock()
	if _, ok := e.routes[rc]; !ok {
		e.routes[rc] = routeOf(m)
		e.routeOrder = append(e.routeOrder, rc)
		if len(e.routeOrder) > maxRoutes {
			delete(e.routes, e.routeOrder[0])
			e.routeOrder = e.routeOrder[1:]
		}
	}
	e.mu.Unlock()
	e.wake()
}

// routeOf returns where receipts about m go: the sender's session when
// m named one it may be replied on ([gate.UsableReplyTo]), else its bare
// key.
func routeOf(m *identity.Message) string {
	if hint, ok := gate.UsableReplyTo(m); ok {
		return hint.String()
	}
	return m.From
}

// Reached notes that the received messages named by receipts reached
// stage, for the senders not known to refuse receipts (the flush finds
// out for the others before it sends); those known to refuse them cost
// nothing.
func (e *Emitter) Reached(stage Stage, receipts []mailbox.Receipt) {
	ctx, cancel := context.WithTimeout(context.Background(), noteTimeout)
	defer cancel()
	woke := false
	for _, r := range receipts {
		k, err := identity.ParsePublicKey(r.Sender)
		if err != nil {
			continue
		}
		if yes, known, err := e.cfg.Caps(k); err != nil || (known && !yes) {
			continue
		}
		e.mu.Lock()
		rt := e.routes[r]
		e.mu.Unlock()
		changed, err := e.cfg.Owed.Note(ctx, r.Sender, r.MsgID, rt, stage, true)
		if err != nil {
			e.cfg.Logger.Warn("receipt stage not noted", "stage", stage.String(), "msg_id", r.MsgID, "err", err)
			continue
		}
		woke = woke || changed
	}
	if woke {
		e.wake()
	}
}

// retryAfter is how long Run waits before it tries again after a flush
// that failed (the outbox full, a file locked), when no stage came since.
const retryAfter = 5 * time.Second

// Run sends what is owed until ctx ends: at once for what an earlier
// process left, then each time a stage was noted, after the window, and
// again every retryAfter while a flush fails.
func (e *Emitter) Run(ctx context.Context) {
	ok := e.flush(ctx)
	for {
		var retry <-chan time.Time
		var rt *time.Timer
		if !ok {
			rt = time.NewTimer(retryAfter)
			retry = rt.C
		}
		select {
		case <-ctx.Done():
		case <-e.kick:
		case <-retry:
		}
		if rt != nil {
			rt.Stop()
		}
		if ctx.Err() != nil {
			return
		}
		t := time.NewTimer(e.cfg.Window)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		ok = e.flush(ctx)
	}
}

// Flush queues what is owed now, without waiting for the window; the
// agent calls it when it stops, before the outbox drains.
func (e *Emitter) Flush(ctx context.Context) { e.flush(ctx) }

func (e *Emitter) flush(ctx context.Context) bool {
	var opts FlushOptions
	opts.Keep = func(sender string) bool { return e.takes(ctx, sender) }
	if e.cfg.Live != nil {
		recs, err := e.cfg.Live()
		if err != nil {
			e.cfg.Logger.Warn("mailbox unreadable; receipts wait", "err", err)
			return false
		}
		unread := make(map[mailbox.Receipt]bool, len(recs))
		for i := range recs {
			r := &recs[i]
			if !r.Unread() {
				continue
			}
			unread[r.Receipt()] = true
			if sd, ok := e.seed(ctx, r); ok {
				opts.Stored = append(opts.Stored, sd)
			}
		}
		opts.Live = func(sender, msgID string) bool { return unread[mailbox.Receipt{Sender: sender, MsgID: msgID}] }
	}
	n, err := e.cfg.Owed.Flush(ctx, &opts, func(b Batch) error {
		to, err := identity.ParsePublicKey(b.To)
		if err != nil {
			return nil // cannot happen: noted from authenticated keys
		}
		m, err := NewReceipt(e.cfg.Signer, to, b.Entries, identity.Millis(e.cfg.Now()))
		if err != nil {
			return err
		}
		return e.cfg.Queue(ctx, b.Route, m)
	})
	if err != nil {
		if ctx.Err() == nil {
			e.cfg.Logger.Warn("receipts not queued; will retry", "err", err)
		}
		return false
	}
	if n > 0 {
		e.cfg.Logger.Debug("receipts queued", "receipts", n)
	}
	return true
}

// seed returns the seed of the unread record r when its sender takes
// receipts.
func (e *Emitter) seed(ctx context.Context, r *mailbox.Record) (Seed, bool) {
	if !e.takes(ctx, r.Message.From) {
		return Seed{}, false
	}
	return Seed{Sender: r.Message.From, MsgID: r.Message.MsgID, Route: routeOf(&r.Message)}, true
}

// takes reports whether receipts go to sender. A key nothing is known of
// is looked up once per emitter (Learn).
func (e *Emitter) takes(ctx context.Context, sender string) bool {
	k, err := identity.ParsePublicKey(sender)
	if err != nil {
		return false
	}
	yes, known, err := e.cfg.Caps(k)
	if err == nil && !known && e.cfg.Learn != nil {
		e.mu.Lock()
		done := e.learned[k]
		e.learned[k] = true
		e.mu.Unlock()
		if !done {
			e.cfg.Learn(ctx, k)
			yes, _, err = e.cfg.Caps(k)
		}
	}
	return err == nil && yes
}
