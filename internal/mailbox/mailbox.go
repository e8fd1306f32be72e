package mailbox

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/mailbox/history"
	"github.com/interlink-go/interlink/internal/paths"
	"github.com/interlink-go/interlink/internal/route"
	"github.com/interlink-go/interlink/internal/statefile"
)

// Bounds (see [Mailbox.Retain]).
const (
	// MaxRecords is the most unread records a mailbox holds after
	// admitting a message. One sender may hold at most half of what the
	// others leave free.
	MaxRecords = 4096
	// MaxRecordsBytes is the largest serialized array of unread records,
	// in bytes, after admitting a message. One sender may hold at most
	// half of what the others leave free.
	MaxRecordsBytes = 32 << 20
	// MaxTombstones is the most messages of one sender that a mailbox
	// remembers at once: its unread records and its tombstones still
	// inside the replay window, together. A message that would go beyond
	// it is refused, so the replay state of every sender lasts its whole
	// window, whatever any sender sends.
	MaxTombstones = 65536
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

	// tombs is the tombstone log and hist the history; guarded by the
	// file lock, not by mu.
	tombs *tombLog
	hist  *history.Log

	// last is the file as this Mailbox last read or wrote it: a file with
	// the same bytes decodes to the same document, so decoding it again
	// is skipped.
	last *statefile.Cache[document]

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
	file, err := paths.SessionFile(stateRoot, paths.Mailbox, own, session)
	if err != nil {
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
	return &Mailbox{
		path:     file.Path(),
		tombs:    newTombLog(file.Sidecar("tombstones.jsonl")),
		hist:     history.New(file.Sidecar("history"), func(s string) bool { return State(s).recordState() }, o.Logger),
		lockPath: file.Lock(),
		now:      o.Now,
		newID:    o.NewID,
		log:      o.Logger,
		last:     statefile.NewCache(func(d document) document { return d.clone() }),
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

// read decodes the current file without taking the lock. The document it
// returns is the caller's to change.
func (m *Mailbox) read() (document, error) {
	data, exists, err := statefile.Read(m.path)
	if err != nil {
		return document{}, fmt.Errorf("mailbox: %w", err)
	}
	if !exists {
		return document{}, nil
	}
	if d, ok := m.last.Get(data); ok {
		return d, nil
	}
	d, err := decode(data, exists)
	if err != nil {
		return document{}, fmt.Errorf("%w (%s)", err, m.path)
	}
	m.last.Put(data, d)
	return d, nil
}

// update runs fn on the current document with the lock held and writes the
// result when fn reports a change. An error from fn is returned as is and
// nothing is written; a corrupt file is never overwritten. With admit set,
// a result beyond the admission bounds is refused with [ErrFull].
//
// Waiting for the lock ends when ctx does; the error then wraps ctx's.
//
// While fn runs, d.tombs is the tombstone log, brought up to date, and the
// tombstones fn puts in d.added are appended to it before the file is
// written: a crash in between leaves a message both unread and tombstoned,
// which the next change resolves in favour of the tombstone, so nothing
// already consumed is shown as new after a redelivery.
func (m *Mailbox) update(ctx context.Context, admit bool, fn func(d *document) (changed bool, err error)) error {
	return statefile.Locked(ctx, m.lockPath, func() error {
		d, err := m.read()
		if err != nil {
			return err
		}
		if err := m.tombs.refresh(); err != nil {
			return err
		}
		d.tombs = m.tombs
		// Move what an earlier file kept whole to the log first, and drop
		// records the log already has (see above).
		migrate := len(d.legacy) > 0
		if migrate {
			tombs := make([]Tombstone, len(d.legacy))
			for i := range d.legacy {
				tombs[i] = tombstoneOf(&d.legacy[i])
			}
			if err := m.tombs.add(tombs); err != nil {
				return err
			}
			d.retired = append(d.retired, d.legacy...)
			d.legacy = nil
		}
		n := len(d.records)
		d.records = slices.DeleteFunc(d.records, func(r Record) bool {
			_, gone := m.tombs.get(r.Receipt())
			if gone {
				d.retired = append(d.retired, r)
			}
			return gone
		})
		migrate = migrate || len(d.records) != n

		changed, err := fn(&d)
		if err != nil {
			return err
		}
		if !changed && !migrate && len(d.added) == 0 {
			keep(m.hist, m.log, d.retired, identity.Millis(m.now()))
			return nil
		}
		if admit && len(d.records) > MaxRecords {
			return fmt.Errorf("%w (%d unread records, limit %d)", ErrFull, len(d.records), MaxRecords)
		}
		records, sizes, err := encodeRecords(d.records)
		if err != nil {
			return fmt.Errorf("mailbox: encode: %w", err)
		}
		if admit && len(records) > MaxRecordsBytes {
			return fmt.Errorf("%w (%d bytes of unread records, limit %d)", ErrFull, len(records), MaxRecordsBytes)
		}
		if admit && d.admitted != "" {
			if err := share(&d, len(records), sizes, identity.Millis(m.now())); err != nil {
				return err
			}
		}
		data, err := encode(records, d.notice)
		if err != nil {
			return fmt.Errorf("mailbox: encode: %w", err)
		}
		keep(m.hist, m.log, d.retired, identity.Millis(m.now()))
		if err := m.tombs.add(d.added); err != nil {
			return err
		}
		if err := m.tombs.compactIfDue(identity.Millis(m.now())); err != nil {
			m.log.Warn("mailbox: tombstone log not compacted", "err", err)
		}
		if err := statefile.WriteAtomic(m.path, data); err != nil {
			return fmt.Errorf("mailbox: %w", err)
		}
		m.last.Put(data, d)
		return nil
	})
}

// keep writes the text of records that stopped being unread to the
// history, before their tombstones are appended: a crash in between
// leaves a history line for a message still unread, which shows the
// unread record while it is one, and nothing is lost. The history only
// shows, so failing to write it stops neither intake nor acknowledging:
// the failure is logged and the text of those records is not kept.
func keep(h *history.Log, log *slog.Logger, recs []Record, now uint64) {
	if len(recs) == 0 {
		return
	}
	if err := h.Add(historyLines(recs), now); err != nil {
		log.Warn("mailbox: history not written; the text of consumed messages is not kept", "err", err)
	}
}

// historyLines returns the history lines of recs.
func historyLines(recs []Record) []history.Line {
	lines := make([]history.Line, len(recs))
	for i := range recs {
		r := &recs[i]
		lines[i] = history.Line{Message: r.Message, Raw: r.raw, Peer: r.Peer, State: string(r.State), SupersededBy: r.SupersededBy}
	}
	return lines
}

// share checks that the sender d.admitted stays within its share after
// fn admitted its message; total is the size of the encoded records and
// sizes the size of each.
//
// A sender may hold at most half of what the other senders leave free, in
// records and in bytes: its holding plus everyone's stays within the
// bound. So no sender, and no k senders together, can leave less than
// 1/2^k of the mailbox to the others, and the mailbox as a whole never
// fills: a message is refused for its sender's holding, never kept waiting
// on the broker ahead of another sender's. And a sender's unread records
// and tombstones inside the replay window together stay within
// [MaxTombstones], so the replay state one sender causes is bounded, and
// nobody else's is ever evicted for it.
func share(d *document, total int, sizes []int, now uint64) error {
	s := d.admitted
	var held, heldBytes int
	for i := range d.records {
		if d.records[i].Message.From == s {
			held++
			heldBytes += sizes[i]
		}
	}
	if d.admittedRecord {
		// Said as it was before the message: the new one is the last.
		newBytes := sizes[len(sizes)-1]
		if held+len(d.records) > MaxRecords {
			return fmt.Errorf("%w (it holds %d of %d unread records; a sender may hold half of what the others leave free of %d)",
				ErrOverShare, held-1, len(d.records)-1, MaxRecords)
		}
		if heldBytes+total > MaxRecordsBytes {
			return fmt.Errorf("%w (it holds %d of %d bytes of unread records and the message takes %d; a sender may hold half of what the others leave free of %d)",
				ErrOverShare, heldBytes-newBytes, total-newBytes, newBytes, MaxRecordsBytes)
		}
	}
	entries := held + d.tombs.liveCount(s, now)
	for i := range d.added {
		if d.added[i].Sender != s {
			continue
		}
		if _, known := d.tombs.get(d.added[i].Receipt()); !known {
			entries++
		}
	}
	if entries > MaxTombstones {
		return fmt.Errorf("%w (it has %d messages within the replay window, unread or not; a sender may have %d)",
			ErrOverShare, entries-1, MaxTombstones)
	}
	return nil
}

// Retain commits a verified inbound message msg from the sender known
// locally as peer. Waiting for the file lock ends when ctx does. It reports
// added false, with no change to the file, when a record or a tombstone
// with the same sender (From) and msg_id exists, so a message redelivered
// by another relay or after a restart is stored once, and for a progress
// update that arrives superseded by a message signed later (see below).
//
// Otherwise, under the lock, it
//  1. counts as gone the tombstones whose message timestamp is more than
//     [protocol.MaxPast] before now (they live as long as the gate would
//     accept a replay; unread records are never pruned); the log drops
//     them at its next compaction,
//  2. coalesces progress: when msg has a task_id and its status is update
//     or terminal, every earlier record or tombstone with the same From,
//     the same reply_to (both empty or equal) and the same task_id is
//     compared with it. An incoming update is born superseded by an
//     earlier terminal message or by an earlier update with a newer
//     timestamp, so late progress never hides a finished or newer state;
//     an earlier unread update is superseded by an incoming terminal
//     message or by an incoming update at least as new. needs_input,
//     plain messages and messages without a task_id are never coalesced,
//     and neither is a message with an empty msg_id, which superseded_by
//     could not name,
//  3. appends the record in state [StateStored], or, born superseded, its
//     tombstone, and writes the file.
//
// A superseded update leaves no tombstone when the message that
// superseded it was signed later (a final status: no earlier): that
// message's own record or tombstone lasts at least as long, and a copy of
// the update arrives superseded by it again. So a stream of progress, and
// a flood of late updates after a result, cost no replay state.
//
// Admission is bounded per sender (see [MaxRecords], [MaxRecordsBytes]
// and [MaxTombstones]): a message that would take its sender beyond its
// share is refused with [ErrOverShare] and changes nothing; the caller
// drops it, since leaving it on the broker would hold up the messages of
// other senders queued behind it. If the unread records as a whole would
// exceed the bounds (a file written by an earlier version can), Retain
// fails with [ErrFull] and changes nothing: the caller must leave the
// message on the broker.
func (m *Mailbox) Retain(ctx context.Context, msg identity.Message, peer string) (added bool, err error) {
	err = m.update(ctx, true, func(d *document) (bool, error) {
		added = false
		for i := range d.records {
			if d.records[i].Message.From == msg.From && d.records[i].Message.MsgID == msg.MsgID {
				return false, nil
			}
		}
		if _, ok := d.tombs.get(Receipt{Sender: msg.From, MsgID: msg.MsgID}); ok {
			return false, nil
		}
		rec := Record{Message: msg, Peer: peer, State: StateStored}
		if raw, err := msg.MarshalJSON(); err == nil {
			rec.raw = raw
		}
		coalesce(d, &rec)
		switch {
		case rec.SupersededBy == "":
			d.records = append(d.records, rec)
			d.admittedRecord = true
		case rec.covered:
			// No tombstone: see above. Earlier updates it superseded
			// are covered by the same message. The history shows it,
			// superseded, as it shows every message of the window.
			retire(d)
			d.retired = append(d.retired, rec)
			return len(d.added) > 0, nil
		default:
			d.added = append(d.added, tombstoneOf(&rec))
			d.retired = append(d.retired, rec)
		}
		d.admitted = msg.From
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

// coalesce applies the progress rules of [Mailbox.Retain] between the
// incoming record in and the earlier records and tombstones of d. Records
// it supersedes become tombstones, or leave nothing when in covers them.
func coalesce(d *document, in *Record) {
	im := &in.Message
	if im.TaskID == "" || im.MsgID == "" || !(im.Status == identity.StatusUpdate || im.Status.Terminal()) {
		return
	}
	// bornBy considers an earlier message of the task as what supersedes
	// an incoming update, preferring one that covers it: signed later, or
	// for a final status no earlier.
	bornBy := func(id string, st identity.Status, ts uint64) {
		var covers bool
		switch {
		case st.Terminal():
			covers = ts >= im.TS
		case st == identity.StatusUpdate && ts > im.TS:
			covers = true
		default:
			return
		}
		if in.SupersededBy == "" || (covers && !in.covered) {
			in.SupersededBy, in.covered = id, covers
		}
	}
	if im.Status == identity.StatusUpdate {
		t := d.tombs.task(taskKey{im.From, im.ReplyTo, im.TaskID})
		if t.final != "" {
			bornBy(t.final, identity.StatusResult, t.finalTS)
		}
		if t.update != "" {
			bornBy(t.update, identity.StatusUpdate, t.updateTS)
		}
	}
	superseded := false
	for i := range d.records {
		prior := &d.records[i]
		pm := &prior.Message
		if pm.From != im.From || pm.ReplyTo != im.ReplyTo || pm.TaskID != im.TaskID || pm.MsgID == "" {
			continue
		}
		if im.Status == identity.StatusUpdate {
			bornBy(pm.MsgID, pm.Status, pm.TS)
		}
		if pm.Status == identity.StatusUpdate && prior.SupersededBy == "" &&
			(im.Status.Terminal() || pm.TS <= im.TS) {
			prior.SupersededBy = im.MsgID
			prior.covered = pm.TS < im.TS || (im.Status.Terminal() && pm.TS == im.TS)
			superseded = true
		}
	}
	if superseded {
		retire(d)
	}
}

// retire turns every record of d that is no longer unread into a
// tombstone, keeping the order of the rest, and hands it to the history.
// A superseded record that its successor covers (see [Mailbox.Retain])
// leaves no tombstone.
func retire(d *document) {
	d.records = slices.DeleteFunc(d.records, func(r Record) bool {
		if r.Unread() {
			return false
		}
		if !r.covered || r.State == StateAcknowledged {
			d.added = append(d.added, tombstoneOf(&r))
		}
		d.retired = append(d.retired, r)
		return true
	})
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

// Records returns the unread records in file order, without taking the
// lock. Messages that are no longer unread are tombstones: see
// [Mailbox.Tombstones].
func (m *Mailbox) Records() ([]Record, error) {
	d, err := m.read()
	return d.records, err
}

// Tombstones returns the tombstones still inside the replay window, in the
// order the messages stopped being unread. It takes the file lock, since
// the tombstone log is read incrementally under it.
func (m *Mailbox) Tombstones() (out []Tombstone, err error) {
	err = statefile.Locked(context.Background(), m.lockPath, func() error {
		if err := m.tombs.refresh(); err != nil {
			return err
		}
		out = m.tombs.current(identity.Millis(m.now()))
		return nil
	})
	return out, err
}

// Acknowledge marks the messages named by receipts as consumed, superseded
// ones included, and returns how many were not acknowledged before. A
// consumed record becomes a tombstone, and its text moves to the history
// (see [Mailbox.History]). Unknown and repeated receipts change nothing, so
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
	err := m.update(context.Background(), false, func(d *document) (bool, error) {
		n = m.acknowledgeIn(d, want)
		cleared := clearCovered(d)
		return n > 0 || cleared, nil
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// acknowledgeIn marks the messages of d named in want as acknowledged, as
// [Mailbox.Acknowledge] describes, and returns how many were not before.
// The lock is held. A superseded update that left no tombstone (see
// [Mailbox.Retain]) and that the history still shows gets one now, saying
// it was acknowledged, so that it shows in that state from then on (such
// tombstones are bounded by the sender's share of the history). The
// history is looked at only for receipts the file and the tombstones do
// not know, and a history that cannot be read only leaves those alone.
func (m *Mailbox) acknowledgeIn(d *document, want map[Receipt]bool) int {
	n := 0
	live := make(map[Receipt]bool, len(d.records))
	for i := range d.records {
		r := &d.records[i]
		live[r.Receipt()] = true
		if r.State != StateAcknowledged && want[r.Receipt()] {
			r.State = StateAcknowledged
			n++
		}
	}
	var rest []Receipt
	for r := range want {
		t, ok := d.tombs.get(r)
		switch {
		case ok && !t.Acknowledged:
			t.Acknowledged = true
			d.added = append(d.added, t)
			n++
		case !ok && !live[r]:
			rest = append(rest, r)
		}
	}
	retire(d)
	if len(rest) == 0 {
		return n
	}
	now := identity.Millis(m.now())
	if err := m.hist.Refresh(now); err != nil {
		m.log.Warn("mailbox: history not read; superseded updates it alone shows stay as they are", "err", err)
		return n
	}
	for _, rc := range rest {
		e, ok := m.hist.Entry(history.Key(rc))
		if !ok || expiredAt(e.TS, now) || e.SupersededBy == "" {
			continue
		}
		r, ok, err := historyRecord(m.hist, rc, e)
		if err != nil {
			m.log.Warn("mailbox: history not read; superseded updates it alone shows stay as they are", "err", err)
			return n
		}
		if ok {
			r.State = StateAcknowledged
			d.added = append(d.added, tombstoneOf(&r))
			n++
		}
	}
	return n
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
