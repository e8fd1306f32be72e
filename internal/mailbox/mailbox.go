package mailbox

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/interlink-go/interlink/internal/gate"
	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/route"
	"github.com/interlink-go/interlink/internal/statefile"
)

// Admission bounds (see [Mailbox.Retain]).
const (
	// MaxRecords is the most records a mailbox holds after admitting a
	// message.
	MaxRecords = 4096
	// MaxRecordsBytes is the largest serialized records array, in bytes,
	// after admitting a message.
	MaxRecordsBytes = 32 << 20
)

// Options holds optional settings for [Open]. A nil *Options means defaults.
type Options struct {
	// Now is the clock; nil means time.Now. It decides pruning and notice
	// expiry.
	Now func() time.Time
	// NewID returns a fresh notice id; nil means [route.NewSessionID]
	// (8 hex characters from crypto/rand).
	NewID func() (string, error)
	// Logger receives events such as an issued notice; nil means discard.
	Logger *slog.Logger
}

// Mailbox reads and changes the mailbox file of one identity and session.
// It holds the paths and the settings, fixed at [Open], and what
// [Mailbox.Reserve] last found; it is safe for concurrent use, and any
// number of Mailbox values, in this process or others, may share a file:
// the file lock orders their changes.
type Mailbox struct {
	path     string
	lockPath string
	now      func() time.Time
	newID    func() (string, error)
	log      *slog.Logger

	mu    sync.Mutex // guards quiet
	quiet *quiet     // see [Mailbox.Reserve]; nil when unknown
}

// Open returns the mailbox of the identity own and the given session under
// stateRoot: the file <stateRoot>/mailbox/<own key>/<session>.json with its
// lock <session>.lock. Nothing is created until the first change.
//
// The session id becomes a file name, so it must pass
// [route.ValidateSession]; otherwise the error wraps
// [route.ErrInvalidSession].
func Open(stateRoot string, own identity.PublicKey, session string, opts *Options) (*Mailbox, error) {
	if stateRoot == "" {
		return nil, errors.New("mailbox: open: empty state root")
	}
	if err := route.ValidateSession(session); err != nil {
		return nil, fmt.Errorf("mailbox: open: %w", err)
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.NewID == nil {
		o.NewID = route.NewSessionID
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	path := filepath.Join(stateRoot, "mailbox", own.String(), session+".json")
	return &Mailbox{
		path:     path,
		lockPath: statefile.LockPath(path, "lock"),
		now:      o.Now,
		newID:    o.NewID,
		log:      o.Logger,
	}, nil
}

// Path returns the path of the mailbox file.
func (m *Mailbox) Path() string { return m.path }

// NotifierLockPath returns the path of the lock that the single process
// notifying the host for this mailbox holds. This package never takes it.
func (m *Mailbox) NotifierLockPath() string {
	return statefile.LockPath(m.path, "notifier-lock")
}

// nowMS returns the clock in Unix milliseconds.
func (m *Mailbox) nowMS() uint64 { return identity.Millis(m.now()) }

// read decodes the current file without taking the lock.
func (m *Mailbox) read() (document, error) {
	data, exists, err := statefile.Read(m.path)
	if err != nil {
		return document{}, fmt.Errorf("mailbox: %w", err)
	}
	d, err := decode(data, exists)
	if err != nil {
		return document{}, fmt.Errorf("%w (%s)", err, m.path)
	}
	return d, nil
}

// update runs fn on the current document with the lock held and writes the
// result when fn reports a change. An error from fn is returned as is and
// nothing is written; a corrupt file is never overwritten. With admit set,
// a result beyond the admission bounds is refused with [ErrFull].
func (m *Mailbox) update(admit bool, fn func(d *document) (changed bool, err error)) (err error) {
	unlock, err := statefile.Lock(m.lockPath)
	if err != nil {
		return fmt.Errorf("mailbox: %w", err)
	}
	defer func() {
		if uerr := unlock(); uerr != nil && err == nil {
			err = fmt.Errorf("mailbox: %w", uerr)
		}
	}()
	d, err := m.read()
	if err != nil {
		return err
	}
	changed, err := fn(&d)
	if err != nil || !changed {
		return err
	}
	if admit && len(d.records) > MaxRecords {
		return fmt.Errorf("%w (%d records, limit %d)", ErrFull, len(d.records), MaxRecords)
	}
	records, err := encodeRecords(d.records)
	if err != nil {
		return fmt.Errorf("mailbox: encode: %w", err)
	}
	if admit && len(records) > MaxRecordsBytes {
		return fmt.Errorf("%w (%d bytes of records, limit %d)", ErrFull, len(records), MaxRecordsBytes)
	}
	data, err := encode(records, d.notice)
	if err != nil {
		return fmt.Errorf("mailbox: encode: %w", err)
	}
	if err := statefile.WriteAtomic(m.path, data); err != nil {
		return fmt.Errorf("mailbox: %w", err)
	}
	return nil
}

// Retain commits a verified inbound message msg from the sender known
// locally as peer. It reports added false, with no change to the file, when
// a record with the same sender (From) and msg_id already exists, so a
// message redelivered by another relay or after a restart is stored once.
//
// Otherwise, under the lock, it
//  1. prunes records that are no longer unread and whose message timestamp
//     is more than [gate.MaxPast] before now (unread records are never
//     pruned; tombstones live as long as the gate would accept a replay),
//  2. coalesces progress: when msg has a task_id and its status is update
//     or terminal, every earlier record with the same From, the same
//     reply_to (both empty or equal) and the same task_id is compared with
//     it. An incoming update is born superseded by an earlier terminal
//     record or by an earlier update with a newer timestamp, so late
//     progress never hides a finished or newer state; an earlier update not
//     yet superseded is superseded by an incoming terminal message or by an
//     incoming update at least as new. needs_input, plain messages and
//     messages without a task_id are never coalesced, and neither is a
//     message with an empty msg_id, which superseded_by could not name,
//  3. appends the record in state [StateStored] and writes the file.
//
// If the result would exceed [MaxRecords] records or [MaxRecordsBytes]
// bytes of records, Retain fails with [ErrFull] and changes nothing: the
// caller must leave the message on the broker.
func (m *Mailbox) Retain(msg identity.Message, peer string) (added bool, err error) {
	now := m.nowMS()
	err = m.update(true, func(d *document) (bool, error) {
		for i := range d.records {
			if d.records[i].Message.From == msg.From && d.records[i].Message.MsgID == msg.MsgID {
				return false, nil
			}
		}
		d.records = prune(d.records, now)
		rec := Record{Message: msg, Peer: peer, State: StateStored}
		coalesce(d.records, &rec)
		d.records = append(d.records, rec)
		added = true
		return true, nil
	})
	if err != nil {
		return false, err
	}
	if added {
		m.log.Debug("mailbox: retained message", "msg_id", msg.MsgID, "sender", msg.From)
	}
	return added, nil
}

// prune drops the records that are not unread and whose timestamp is more
// than gate.MaxPast before now.
func prune(recs []Record, now uint64) []Record {
	maxPast := uint64(gate.MaxPast.Milliseconds())
	return slices.DeleteFunc(recs, func(r Record) bool {
		return !r.Unread() && now > r.Message.TS && now-r.Message.TS > maxPast
	})
}

// coalesce applies the progress rules of [Mailbox.Retain] between the
// incoming record in and the earlier records recs.
func coalesce(recs []Record, in *Record) {
	im := &in.Message
	if im.TaskID == "" || im.MsgID == "" || !(im.Status == identity.StatusUpdate || im.Status.Terminal()) {
		return
	}
	for i := range recs {
		prior := &recs[i]
		pm := &prior.Message
		if pm.From != im.From || pm.ReplyTo != im.ReplyTo || pm.TaskID != im.TaskID || pm.MsgID == "" {
			continue
		}
		if im.Status == identity.StatusUpdate &&
			(pm.Status.Terminal() || (pm.Status == identity.StatusUpdate && pm.TS > im.TS)) {
			in.SupersededBy = pm.MsgID
		}
		if pm.Status == identity.StatusUpdate && prior.SupersededBy == "" &&
			(im.Status.Terminal() || pm.TS <= im.TS) {
			prior.SupersededBy = im.MsgID
		}
	}
}

// Receive returns the unread records in file order, with every record that
// is not a progress update before the updates (the order within each group
// is kept), at most limit of them; limit <= 0 means all. It reads without
// the lock and changes nothing: fetching never consumes a message.
func (m *Mailbox) Receive(limit int) ([]Record, error) {
	d, err := m.read()
	if err != nil {
		return nil, err
	}
	var first, updates []Record
	for _, r := range d.records {
		switch {
		case !r.Unread():
		case r.Message.Status == identity.StatusUpdate:
			updates = append(updates, r)
		default:
			first = append(first, r)
		}
	}
	out := append(first, updates...)
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// Records returns every record in file order, in any state, without taking
// the lock.
func (m *Mailbox) Records() ([]Record, error) {
	d, err := m.read()
	return d.records, err
}

// Acknowledge marks the records named by receipts as consumed
// ([StateAcknowledged]), superseded ones included, and returns how many were
// not acknowledged before. Unknown and repeated receipts change nothing, so
// acknowledging is idempotent, also across processes: two concurrent
// acknowledgements of one record count it once in total.
//
// When no message covered by the current notice is still unread afterwards,
// the notice is cleared, so that a message arriving later wakes the host
// again at once.
func (m *Mailbox) Acknowledge(receipts []Receipt) (int, error) {
	want := make(map[Receipt]bool, len(receipts))
	for _, r := range receipts {
		want[r] = true
	}
	var n int
	err := m.update(false, func(d *document) (bool, error) {
		n = 0
		for i := range d.records {
			r := &d.records[i]
			if r.State != StateAcknowledged && want[r.Receipt()] {
				r.State = StateAcknowledged
				n++
			}
		}
		cleared := clearCovered(d)
		return n > 0 || cleared, nil
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// clearCovered removes the notice of d when none of the messages it covers
// is still unread, and reports whether it did.
func clearCovered(d *document) bool {
	if d.notice == nil {
		return false
	}
	covered := make(map[Receipt]bool, len(d.notice.Messages))
	for _, r := range d.notice.Messages {
		covered[r] = true
	}
	for i := range d.records {
		if d.records[i].Unread() && covered[d.records[i].Receipt()] {
			return false
		}
	}
	d.notice = nil
	return true
}

// History returns the inbound half of the conversation with peer: every
// record whose stored petname equals peer, in any state (acknowledged and
// superseded included), sorted by message timestamp and then msg_id, newest
// last, keeping the last limit of them; limit <= 0 means all.
//
// With consume set, exactly the returned records are acknowledged in the
// same locked step (and the notice is cleared as by [Mailbox.Acknowledge]),
// and the returned records show their new state.
//
// Outbound messages are not in the mailbox. A caller that merges them in
// before applying the limit should call History with consume false and then
// pass the receipts of the inbound records it kept to [Mailbox.Acknowledge].
func (m *Mailbox) History(peer string, limit int, consume bool) ([]Record, error) {
	if !consume {
		d, err := m.read()
		if err != nil {
			return nil, err
		}
		return history(d.records, peer, limit), nil
	}
	var out []Record
	err := m.update(false, func(d *document) (bool, error) {
		out = history(d.records, peer, limit)
		kept := make(map[Receipt]bool, len(out))
		for i := range out {
			kept[out[i].Receipt()] = true
			out[i].State = StateAcknowledged
		}
		changed := false
		for i := range d.records {
			r := &d.records[i]
			if r.State != StateAcknowledged && kept[r.Receipt()] {
				r.State = StateAcknowledged
				changed = true
			}
		}
		if clearCovered(d) {
			changed = true
		}
		return changed, nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// history selects and orders the records of peer as [Mailbox.History]
// describes.
func history(recs []Record, peer string, limit int) []Record {
	var out []Record
	for _, r := range recs {
		if r.Peer == peer {
			out = append(out, r)
		}
	}
	slices.SortStableFunc(out, func(a, b Record) int {
		return cmp.Or(cmp.Compare(a.Message.TS, b.Message.TS), cmp.Compare(a.Message.MsgID, b.Message.MsgID))
	})
	if limit > 0 && len(out) > limit {
		out = out[len(out)-limit:]
	}
	return out
}
