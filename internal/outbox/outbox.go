package outbox

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/paths"
	"github.com/interlink-go/interlink/internal/protocol"
	"github.com/interlink-go/interlink/internal/relay"
	"github.com/interlink-go/interlink/internal/statefile"
)

// Defaults of [Options].
const (
	// DefaultRetryEvery is the wait between attempts at an undelivered
	// message.
	DefaultRetryEvery = 5 * time.Second
	// DefaultResignAfter is the age of a signature after which a message is
	// signed again before an attempt: the receivers' freshness window.
	DefaultResignAfter = protocol.MaxPast
	// DefaultExpireAfter is how long a message may stay pending before it
	// is given up as [StateExpired]: the time after which a relay forgets
	// a session that stopped announcing itself, so a message still unsent
	// by then is unlikely to find its recipient.
	DefaultExpireAfter = protocol.RosterRetention
	// DefaultWatchEvery is how often the sending process looks for
	// messages that another process of the session queued.
	DefaultWatchEvery = time.Second
	// DefaultLockRetry is how often a process that does not send for its
	// session tries to take over.
	DefaultLockRetry = 2 * time.Second
	// DrainRetryEvery is the wait between attempts while [Outbox.Drain]
	// runs: short, so a relay that comes back during a shutdown's grace
	// period still gets the messages.
	DrainRetryEvery = 100 * time.Millisecond
)

// Bounds of the outbox file.
const (
	// MaxPending is the most messages a session may have pending; a
	// message beyond it is refused with [ErrFull].
	MaxPending = 1024
	// MaxPendingBytes bounds the signed messages pending, in bytes of
	// JSON, so that the file every enqueue rewrites stays small enough.
	MaxPendingBytes = 32 << 20
	// MaxFinished is the most finished (accepted, rejected or expired)
	// entries the file keeps; beyond it the one that finished first goes.
	MaxFinished = 256
	// MaxFinishedText is the longest text, in bytes, a finished entry
	// keeps for the log; the message itself has left the file by then.
	MaxFinishedText = 4 << 10
)

// Errors returned by this package. Check them with [errors.Is].
var (
	// ErrDuplicate means a message with the same msg_id is already in the
	// outbox.
	ErrDuplicate = errors.New("outbox: duplicate msg_id")
	// ErrFull means the session already has [MaxPending] messages, or
	// [MaxPendingBytes] of them, waiting for a relay.
	ErrFull = errors.New("outbox: full")
	// ErrCorrupt means the outbox file cannot be read as an outbox. It is
	// never overwritten: repair it or move it aside.
	ErrCorrupt = errors.New("outbox: corrupt outbox file")
	// ErrRunning means [Outbox.Run] was called while another Run was active.
	ErrRunning = errors.New("outbox: already running")
)

// State is the delivery state of an outgoing message.
type State string

// The delivery states.
const (
	// StatePending means no relay has accepted the message yet; it is
	// queued and will be tried again.
	StatePending State = "pending"
	// StateBusAccepted means at least one relay accepted the message. The
	// recipient sends no receipt, so nothing later is known.
	StateBusAccepted State = "bus_accepted"
	// StateRejected means every relay refused the message with a permanent
	// 4xx status; it is not tried again.
	StateRejected State = "rejected"
	// StateExpired means no relay accepted the message within
	// [Options.ExpireAfter] of its queueing; it is not tried again.
	StateExpired State = "expired"
)

func (s State) valid() bool {
	switch s {
	case StatePending, StateBusAccepted, StateRejected, StateExpired:
		return true
	}
	return false
}

// Entry is the log record of one outgoing message.
type Entry struct {
	MsgID string
	// Peer is the label the message was sent to, as the caller gave it.
	Peer string
	// Route is the destination route, key#session.
	Route string
	// Text is what the log shows; a finished entry keeps at most
	// [MaxFinishedText] bytes of it.
	Text string
	// TS is the signed timestamp, Unix milliseconds, of the message as it
	// was queued. A re-signed copy carries a later one, not shown here.
	TS uint64
	// QueuedAt is when the message was queued, Unix milliseconds.
	QueuedAt uint64
	State    State
	// Attempts counts the delivery attempts made so far, by any process.
	Attempts int
	// LastError describes why the last attempt did not deliver the
	// message: the errors of the relays, cleaned for display. For a
	// rejected or expired message it is the reason. It is empty once a
	// relay accepted.
	LastError string
	// AcceptedBy lists the URLs of the relays that accepted the message.
	AcceptedBy []string
	// FinishedAt is when the message left the pending state, Unix
	// milliseconds; zero while pending.
	FinishedAt uint64
	// Receipt marks an end-to-end receipt ([Outbox.EnqueueReceipt]): it is
	// sent like any message, but no listing shows it, and it leaves the
	// file as soon as it is no longer pending.
	Receipt bool
}

// Sender posts payloads to one relay; see [relay.Sender].
type Sender = relay.Sender

// Options holds the optional settings of [Open]. A nil *Options, and every
// zero field, means the default.
type Options struct {
	// Now is the wall clock used to judge a signature's age, to re-sign
	// and to expire. Nil means [time.Now].
	Now func() time.Time
	// RetryEvery is the wait between attempts at an undelivered message.
	// Zero means [DefaultRetryEvery].
	RetryEvery time.Duration
	// ResignAfter is the signature age after which a message is signed
	// again before an attempt. Zero means [DefaultResignAfter].
	ResignAfter time.Duration
	// ExpireAfter is how long a message may stay pending. Zero means
	// [DefaultExpireAfter].
	ExpireAfter time.Duration
	// WatchEvery is how often the sending process reads the file for
	// messages other processes queued. Zero means [DefaultWatchEvery].
	WatchEvery time.Duration
	// LockRetry is how often Run tries to become the session's sender
	// while another process is. Zero means [DefaultLockRetry].
	LockRetry time.Duration
	// Logger receives delivery events. Nil discards them.
	Logger *slog.Logger
	// Seal, if set, turns the signed message m and its JSON plain into
	// the payload of an attempt, sealing it when its recipient accepts
	// sealed messages (see package sealcap), and says whether it did. It
	// runs at every attempt, after re-signing, so a re-signed message is
	// sealed again, and a recipient learned to seal after the message was
	// queued gets it sealed. An error keeps the message pending. Nil sends
	// plain.
	Seal func(m *identity.Message, plain []byte) (payload []byte, sealed bool, err error)
}

// Outbox is the durable outbox of one identity and session. It is safe for
// concurrent use, and any number of Outbox values, in this process or in
// others, may share the file: the file lock orders their changes, and only
// the one whose Run holds the sender lock sends.
type Outbox struct {
	// Fixed at creation.
	file       *file
	deliver    delivery // one attempt at a message, from this Outbox's Run
	senderLock string
	now        func() time.Time
	retryEvery time.Duration
	watchEvery time.Duration
	lockRetry  time.Duration
	log        *slog.Logger

	// draining makes the workers retry every DrainRetryEvery.
	draining atomic.Bool
	// sending is set while this Outbox holds the sender lock.
	sending atomic.Bool

	mu      sync.Mutex
	wake    chan struct{} // closed and replaced to wake every waiter; guarded by mu
	running bool          // a Run is active; guarded by mu
}

// Open returns the outbox of the identity own and session under stateRoot:
// the file <stateRoot>/outbox/<own key>/<session>.json, with the write lock
// <session>.lock and the sender lock <session>.sender-lock beside it.
// Nothing is created until the first message. Messages go out through
// relays, and old ones are signed again with signer, which must not be nil.
func Open(stateRoot string, own identity.PublicKey, session string, relays []Sender, signer *identity.Signer, opts *Options) (*Outbox, error) {
	sf, err := paths.SessionFile(stateRoot, paths.Outbox, own, session)
	if err != nil {
		return nil, fmt.Errorf("outbox: open: %w", err)
	}
	if signer == nil {
		return nil, errors.New("outbox: open: no signer")
	}
	if opts == nil {
		opts = &Options{}
	}
	f := &file{
		path:     sf.Path(),
		lockPath: sf.Lock(),
		last:     statefile.NewCache(func(d document) document { return d.clone() }),
	}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Outbox{
		file: f,
		deliver: delivery{
			file:        f,
			relays:      slices.Clone(relays),
			signer:      signer,
			now:         now,
			resignAfter: cmp.Or(opts.ResignAfter, DefaultResignAfter),
			expireAfter: cmp.Or(opts.ExpireAfter, DefaultExpireAfter),
			seal:        opts.Seal,
			log:         log,
		},
		senderLock: sf.Sidecar("sender-lock"),
		now:        now,
		retryEvery: cmp.Or(opts.RetryEvery, DefaultRetryEvery),
		watchEvery: cmp.Or(opts.WatchEvery, DefaultWatchEvery),
		lockRetry:  cmp.Or(opts.LockRetry, DefaultLockRetry),
		log:        log,
		wake:       make(chan struct{}),
	}, nil
}

// Path returns the path of the outbox file.
func (o *Outbox) Path() string { return o.file.path }

// Enqueue is [Outbox.EnqueueLogged] with the message's own text in the log.
func (o *Outbox) Enqueue(ctx context.Context, route, peer string, m identity.Message) error {
	return o.EnqueueLogged(ctx, route, peer, m.Text, m)
}

// EnqueueLogged writes m, already signed, to the outbox file as pending for
// route, logged for peer with logText (a cancellation, say, logs more than
// its text). The message is on disk when EnqueueLogged returns nil, so it
// survives the process; it is sent by whichever process of the session
// runs the outbox. A msg_id already in the file is [ErrDuplicate]; a
// session with [MaxPending] messages (or [MaxPendingBytes] of them) waiting
// gets [ErrFull] and nothing is written.
func (o *Outbox) EnqueueLogged(ctx context.Context, route, peer, logText string, m identity.Message) error {
	return o.enqueue(ctx, route, peer, logText, m, false)
}

// Replace is [Outbox.EnqueueLogged], except that an entry with m's msg_id,
// pending or finished, is replaced by the new one rather than refused: a
// message that must go out again under the same id, such as a pairing
// request asked for a second time, whose id the answer must carry.
func (o *Outbox) Replace(ctx context.Context, route, peer, logText string, m identity.Message) error {
	return o.enqueue(ctx, route, peer, logText, m, true)
}

// EnqueueReceipt queues m, an end-to-end receipt already signed, for
// route. It waits, is sealed and is retried like any message, but
// [Outbox.Pending] and [Outbox.Log] never list it, and once a relay took
// it (or it was rejected or expired) it is removed rather than kept in
// the log, so receipts never push sent messages out of it.
func (o *Outbox) EnqueueReceipt(ctx context.Context, route string, m identity.Message) error {
	return o.enqueueEntry(ctx, route, "", "", m, false, true)
}

// Withdraw removes the pending message msgID from the outbox and reports
// whether it was there, pending. A relay may have taken it already, in an
// attempt that had started; the outcome of that attempt is then not
// recorded. A finished entry is left as it is.
func (o *Outbox) Withdraw(ctx context.Context, msgID string) (bool, error) {
	var found bool
	err := o.file.update(ctx, func(d *document) (bool, error) {
		n := len(d.entries)
		d.entries = slices.DeleteFunc(d.entries, func(s *stored) bool { return s.MsgID == msgID && s.State == StatePending })
		found = len(d.entries) != n
		return found, nil
	})
	return found, err
}

// enqueue writes m as pending; replace makes an entry with the same
// msg_id give way instead of being [ErrDuplicate].
func (o *Outbox) enqueue(ctx context.Context, route, peer, logText string, m identity.Message, replace bool) error {
	return o.enqueueEntry(ctx, route, peer, logText, m, replace, false)
}

// enqueueEntry is enqueue, for a receipt when receipt is set.
func (o *Outbox) enqueueEntry(ctx context.Context, route, peer, logText string, m identity.Message, replace, receipt bool) error {
	if route == "" {
		return errors.New("outbox: enqueue: empty route")
	}
	if m.MsgID == "" {
		return errors.New("outbox: enqueue: empty msg_id")
	}
	payload, err := m.MarshalJSON()
	if err != nil {
		return fmt.Errorf("outbox: enqueue %s: encode: %w", m.MsgID, err)
	}
	now := identity.Millis(o.now())
	err = o.file.update(ctx, func(d *document) (bool, error) {
		if replace {
			d.entries = slices.DeleteFunc(d.entries, func(s *stored) bool { return s.MsgID == m.MsgID })
		}
		pending, bytes := 0, len(payload)
		for _, s := range d.entries {
			if s.MsgID == m.MsgID {
				return false, fmt.Errorf("%w: %s", ErrDuplicate, m.MsgID)
			}
			if s.State == StatePending {
				pending++
				bytes += len(s.raw)
			}
		}
		if pending >= MaxPending {
			return false, fmt.Errorf("%w: %d messages are already waiting for a relay, the most a session may have; "+
				"check the relays (list_pending shows what waits) and send again once some went out", ErrFull, pending)
		}
		if bytes > MaxPendingBytes {
			return false, fmt.Errorf("%w: the messages waiting for a relay would take %d bytes, more than %d; "+
				"check the relays (list_pending shows what waits) and send again once some went out", ErrFull, bytes, MaxPendingBytes)
		}
		d.entries = append(d.entries, &stored{
			Entry: Entry{MsgID: m.MsgID, Peer: peer, Route: route, Text: logText, TS: m.TS, QueuedAt: now, State: StatePending,
				Receipt: receipt},
			raw: payload,
		})
		return true, nil
	})
	if err != nil {
		return err
	}
	o.broadcast()
	return nil
}

// broadcast wakes everyone waiting in this process for a change.
func (o *Outbox) broadcast() {
	o.mu.Lock()
	close(o.wake)
	o.wake = make(chan struct{})
	o.mu.Unlock()
}

// changed returns the channel the next broadcast closes.
func (o *Outbox) changed() <-chan struct{} {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.wake
}

// Status returns the log entry of msgID.
func (o *Outbox) Status(msgID string) (Entry, bool, error) {
	d, err := o.file.read()
	if err != nil {
		return Entry{}, false, err
	}
	for _, s := range d.entries {
		if s.MsgID == msgID {
			return s.Entry, true, nil
		}
	}
	return Entry{}, false, nil
}

// Pending returns the entries that are pending, rejected or expired, in the
// order they were queued: what list_pending shows.
func (o *Outbox) Pending() ([]Entry, error) {
	d, err := o.file.read()
	if err != nil {
		return nil, err
	}
	var out []Entry
	for _, s := range d.entries {
		if s.State != StateBusAccepted && !s.Receipt {
			out = append(out, s.Entry)
		}
	}
	return out, nil
}

// Log returns the newest limit entries sent to peer, ordered by timestamp
// and then msg_id, newest last. A limit of zero or less means all of them.
func (o *Outbox) Log(peer string, limit int) ([]Entry, error) {
	d, err := o.file.read()
	if err != nil {
		return nil, err
	}
	var out []Entry
	for _, s := range d.entries {
		if s.Peer == peer && !s.Receipt {
			out = append(out, s.Entry)
		}
	}
	slices.SortFunc(out, func(a, b Entry) int {
		return cmp.Or(cmp.Compare(a.TS, b.TS), cmp.Compare(a.MsgID, b.MsgID))
	})
	if limit > 0 && len(out) > limit {
		out = out[len(out)-limit:]
	}
	return out, nil
}

// finish moves the entry s out of the pending state into state, drops its
// message, cuts its text, and evicts the finished entries of d beyond
// [MaxFinished], oldest finished first.
func finish(d *document, s *stored, state State, now uint64) {
	if s.Receipt {
		d.entries = slices.DeleteFunc(d.entries, func(e *stored) bool { return e == s })
		return
	}
	s.State = state
	s.FinishedAt = now
	s.raw = nil
	s.Text = cutText(s.Text, MaxFinishedText)
	var finished []*stored
	for _, e := range d.entries {
		if e.State != StatePending {
			finished = append(finished, e)
		}
	}
	if len(finished) <= MaxFinished {
		return
	}
	slices.SortStableFunc(finished, func(a, b *stored) int { return cmp.Compare(a.FinishedAt, b.FinishedAt) })
	evict := make(map[*stored]bool, len(finished)-MaxFinished)
	for _, e := range finished[:len(finished)-MaxFinished] {
		evict[e] = true
	}
	d.entries = slices.DeleteFunc(d.entries, func(e *stored) bool { return evict[e] })
}
