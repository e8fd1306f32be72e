package outbox

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/interlink-go/interlink/internal/identity"
)

// Defaults of [Options].
const (
	// DefaultRetryEvery is the wait between attempts at an undelivered
	// message.
	DefaultRetryEvery = 5 * time.Second
	// DefaultResignAfter is the age of a signature after which a message is
	// signed again before an attempt. It equals the receivers' 24-hour
	// freshness window.
	DefaultResignAfter = 24 * time.Hour
)

// MaxFinished is the most finished (accepted or rejected) entries the log
// keeps.
const MaxFinished = 4096

// Errors returned by this package.
var (
	// ErrDuplicate means a message with the same msg_id is already in the
	// log.
	ErrDuplicate = errors.New("outbox: duplicate msg_id")
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
)

// Entry is the log record of one outgoing message. The values returned by
// [Outbox] are copies; AcceptedBy is never modified once set and may be
// shared.
type Entry struct {
	MsgID string
	// Peer is the label the message was sent to, as the caller gave it.
	Peer string
	// Route is the destination route, key#session.
	Route string
	Text  string
	// TS is the signed timestamp, Unix milliseconds, of the message as it
	// was queued. A re-signed copy carries a later one, not shown here.
	TS    uint64
	State State
	// Attempts counts the delivery attempts made so far.
	Attempts int
	// LastError describes why the last attempt did not deliver the
	// message: the errors of the relays, cleaned for display. For a
	// rejected message it is the reason. It is empty once a relay accepted.
	LastError string
	// AcceptedBy lists the URLs of the relays that accepted the message.
	AcceptedBy []string
}

// Sender posts payloads to one relay. [*relay.Client] implements it.
type Sender interface {
	// URL names the relay in the log and in [Entry.AcceptedBy].
	URL() string
	// Send posts payload to the queue of route. A nil error means the relay
	// accepted it.
	Send(ctx context.Context, route string, payload []byte) error
}

// Options holds the optional settings of [New]. A nil *Options, and every
// zero field, means the default.
type Options struct {
	// Now is the wall clock used to judge a signature's age and to
	// re-sign. Nil means [time.Now].
	Now func() time.Time
	// RetryEvery is the wait between attempts at an undelivered message.
	// Zero means [DefaultRetryEvery].
	RetryEvery time.Duration
	// ResignAfter is the signature age after which a message is signed
	// again before an attempt. Zero means [DefaultResignAfter].
	ResignAfter time.Duration
	// Logger receives delivery events. Nil discards them.
	Logger *slog.Logger
}

// Outbox queues outgoing messages per route and logs their state. It is
// safe for concurrent use.
//
// One mutex, mu, guards the log and the queues. It is held only to read or
// change them: never while posting to a relay, signing, or logging.
type Outbox struct {
	// Fixed at creation.
	relays      []Sender
	signer      *identity.Signer
	now         func() time.Time
	retryEvery  time.Duration
	resignAfter time.Duration
	log         *slog.Logger
	// kick asks Run to start workers for routes that have none. It holds
	// at most one token.
	kick chan struct{}

	mu       sync.Mutex
	entries  map[string]*Entry // by msg_id; guarded by mu
	seq      map[string]uint64 // enqueue order by msg_id; guarded by mu
	nextSeq  uint64            // guarded by mu
	finished []string          // msg_ids in the order they finished; guarded by mu
	routes   map[string]*queue // routes with queued messages; guarded by mu
	running  bool              // a Run is active; guarded by mu
}

// queue is the FIFO of one route.
type queue struct {
	jobs   []*job // oldest first; guarded by Outbox.mu
	active bool   // a worker owns the queue; guarded by Outbox.mu
	// wake tells the route's worker that a message was queued. It holds at
	// most one token.
	wake chan struct{}
}

// job is a queued message. Once queued, msg and payload are read and
// replaced only by the worker of the route, without the lock.
type job struct {
	route   string
	msg     identity.Message
	payload []byte // the JSON text of msg
}

// New returns an empty outbox that delivers through relays, tried in the
// given order, and re-signs old messages with signer, which must not be
// nil.
func New(relays []Sender, signer *identity.Signer, opts *Options) *Outbox {
	if opts == nil {
		opts = &Options{}
	}
	o := &Outbox{
		relays:      slices.Clone(relays),
		signer:      signer,
		now:         opts.Now,
		retryEvery:  cmp.Or(opts.RetryEvery, DefaultRetryEvery),
		resignAfter: cmp.Or(opts.ResignAfter, DefaultResignAfter),
		log:         opts.Logger,
		kick:        make(chan struct{}, 1),
		entries:     make(map[string]*Entry),
		seq:         make(map[string]uint64),
		routes:      make(map[string]*queue),
	}
	if o.now == nil {
		o.now = time.Now
	}
	if o.log == nil {
		o.log = slog.New(slog.DiscardHandler)
	}
	return o
}

// Enqueue logs m, already signed, as pending for peer and queues it for
// route. A msg_id already in the log is [ErrDuplicate]. Delivery starts
// when [Outbox.Run] is active.
func (o *Outbox) Enqueue(route, peer string, m identity.Message) error {
	return o.EnqueueLogged(route, peer, m.Text, m)
}

// EnqueueLogged is [Outbox.Enqueue] with the text the log shows for m given
// separately, for messages whose log line says more than their text (a
// cancellation, say).
func (o *Outbox) EnqueueLogged(route, peer, logText string, m identity.Message) error {
	if route == "" {
		return errors.New("outbox: enqueue: empty route")
	}
	if m.MsgID == "" {
		return errors.New("outbox: enqueue: empty msg_id")
	}
	payload, err := m.MarshalJSON()
	if err != nil {
		return fmt.Errorf("outbox: enqueue %s: encode: %v", m.MsgID, err)
	}
	j := &job{route: route, msg: m, payload: payload}

	o.mu.Lock()
	defer o.mu.Unlock()
	if _, ok := o.entries[m.MsgID]; ok {
		return fmt.Errorf("%w: %s", ErrDuplicate, m.MsgID)
	}
	// The log entry exists before the job is queued, so a status query
	// never misses a message a worker is already sending.
	o.entries[m.MsgID] = &Entry{
		MsgID: m.MsgID, Peer: peer, Route: route, Text: logText, TS: m.TS,
		State: StatePending,
	}
	o.seq[m.MsgID] = o.nextSeq
	o.nextSeq++
	q := o.routes[route]
	if q == nil {
		q = &queue{wake: make(chan struct{}, 1)}
		o.routes[route] = q
	}
	q.jobs = append(q.jobs, j)
	if q.active {
		notify(q.wake)
	} else {
		notify(o.kick)
	}
	return nil
}

// notify puts a token in c unless it already holds one.
func notify(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// Status returns the log entry of msgID.
func (o *Outbox) Status(msgID string) (Entry, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	e, ok := o.entries[msgID]
	if !ok {
		return Entry{}, false
	}
	return *e, true
}

// Pending returns the entries that are pending or rejected, in the order
// they were queued.
func (o *Outbox) Pending() []Entry {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []Entry
	for _, e := range o.entries {
		if e.State == StatePending || e.State == StateRejected {
			out = append(out, *e)
		}
	}
	slices.SortFunc(out, func(a, b Entry) int {
		return cmp.Compare(o.seq[a.MsgID], o.seq[b.MsgID])
	})
	return out
}

// Log returns the newest limit entries sent to peer, ordered by timestamp
// and then msg_id, newest last. A limit of zero or less means all of them.
func (o *Outbox) Log(peer string, limit int) []Entry {
	o.mu.Lock()
	var out []Entry
	for _, e := range o.entries {
		if e.Peer == peer {
			out = append(out, *e)
		}
	}
	o.mu.Unlock()
	slices.SortFunc(out, func(a, b Entry) int {
		return cmp.Or(cmp.Compare(a.TS, b.TS), cmp.Compare(a.MsgID, b.MsgID))
	})
	if limit > 0 && len(out) > limit {
		out = out[len(out)-limit:]
	}
	return out
}

// finishLocked records that the entry of msgID left the queue and evicts
// the oldest finished entries beyond [MaxFinished]. The caller holds mu.
func (o *Outbox) finishLocked(msgID string) {
	o.finished = append(o.finished, msgID)
	for len(o.finished) > MaxFinished {
		old := o.finished[0]
		o.finished = o.finished[1:]
		delete(o.entries, old)
		delete(o.seq, old)
	}
}
