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

// EmitterConfig is what an [Emitter] works with; Owed, Signer, Caps and
// Queue must be set.
type EmitterConfig struct {
	Owed   *Owed
	Signer *identity.Signer
	Caps   Capabilities
	// Learn, if set, looks up the signed capabilities of a key nothing is
	// known of (its announcement on the rosters); it is called at most once
	// per key by one emitter, from its Run.
	Learn func(ctx context.Context, key identity.PublicKey)
	Queue Queue
	// Live, if set, returns the messages still unread in the mailbox; the
	// owed file forgets the others once their stages went (see
	// [Owed.Flush]).
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
}

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
	return &Emitter{cfg: cfg, kick: make(chan struct{}, 1), learned: map[identity.PublicKey]bool{}}
}

// noteTimeout bounds the wait for the owed file's lock.
const noteTimeout = 5 * time.Second

func (e *Emitter) wake() {
	select {
	case e.kick <- struct{}{}:
	default:
	}
}

// Stored notes that the admitted message of d was committed to the mailbox
// (again, for a copy the mailbox already had). Only ordinary messages are
// receipted, and only to a key known to take receipts or not known at all
// and not looked up yet (Run looks before it sends): a key known not to
// take them costs nothing.
func (e *Emitter) Stored(d *gate.Decision) {
	m := &d.Message
	if m.Kind != "" && m.Kind != identity.KindMessage {
		return
	}
	yes, known, err := e.cfg.Caps(d.Sender)
	if err != nil || (known && !yes) {
		return
	}
	if !known {
		e.mu.Lock()
		looked := e.learned[d.Sender]
		e.mu.Unlock()
		if looked {
			return // looked up once already, and it said nothing
		}
	}
	rt := d.Sender.String()
	if d.HasReplyTo() {
		rt = d.ReplyTo.String()
	}
	ctx, cancel := context.WithTimeout(context.Background(), noteTimeout)
	defer cancel()
	changed, err := e.cfg.Owed.Note(ctx, d.Sender.String(), m.MsgID, rt, Stored, true)
	if err != nil {
		e.cfg.Logger.Warn("receipt stage not noted", "stage", Stored.String(), "msg_id", m.MsgID, "err", err)
		return
	}
	if changed {
		e.wake()
	}
}

// Reached notes that the received messages named by receipts reached
// stage. Messages nobody is owed receipts for are left alone.
func (e *Emitter) Reached(stage Stage, receipts []mailbox.Receipt) {
	ctx, cancel := context.WithTimeout(context.Background(), noteTimeout)
	defer cancel()
	woke := false
	for _, r := range receipts {
		changed, err := e.cfg.Owed.Note(ctx, r.Sender, r.MsgID, "", stage, false)
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

// Run sends what is owed until ctx ends: at once for what an earlier
// process left, then each time a stage was noted, after the window.
func (e *Emitter) Run(ctx context.Context) {
	e.flush(ctx)
	for {
		select {
		case <-ctx.Done():
			return
		case <-e.kick:
		}
		t := time.NewTimer(e.cfg.Window)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		e.flush(ctx)
	}
}

// Flush queues what is owed now.
func (e *Emitter) Flush(ctx context.Context) { e.flush(ctx) }

func (e *Emitter) flush(ctx context.Context) {
	// Keys nothing is known of are looked up first, outside the file's
	// lock.
	e.learnUnknown(ctx)
	var live func(sender, msgID string) bool
	if e.cfg.Live != nil {
		if recs, err := e.cfg.Live(); err == nil {
			unread := make(map[mailbox.Receipt]bool, len(recs))
			for i := range recs {
				unread[recs[i].Receipt()] = true
			}
			live = func(sender, msgID string) bool { return unread[mailbox.Receipt{Sender: sender, MsgID: msgID}] }
		}
	}
	n, err := e.cfg.Owed.Flush(ctx, e.takes, live, func(b Batch) error {
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
	if err != nil && ctx.Err() == nil {
		e.cfg.Logger.Warn("receipts not queued; will retry at the next stage", "err", err)
		return
	}
	if n > 0 {
		e.cfg.Logger.Debug("receipts queued", "receipts", n)
	}
}

// takes reports whether receipts go to sender.
func (e *Emitter) takes(sender string) bool {
	k, err := identity.ParsePublicKey(sender)
	if err != nil {
		return false
	}
	yes, _, err := e.cfg.Caps(k)
	return err == nil && yes
}

// learnUnknown calls Learn for each key of the owed file nothing is known
// of, once per key.
func (e *Emitter) learnUnknown(ctx context.Context) {
	if e.cfg.Learn == nil {
		return
	}
	senders, err := e.cfg.Owed.Senders()
	if err != nil {
		return
	}
	for _, s := range senders {
		k, err := identity.ParsePublicKey(s)
		if err != nil {
			continue
		}
		if _, known, err := e.cfg.Caps(k); err != nil || known {
			continue
		}
		e.mu.Lock()
		done := e.learned[k]
		e.learned[k] = true
		e.mu.Unlock()
		if !done {
			e.cfg.Learn(ctx, k)
		}
	}
}
