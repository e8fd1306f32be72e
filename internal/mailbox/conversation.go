package mailbox

import (
	"cmp"
	"context"
	"slices"

	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/mailbox/history"
	"github.com/interlink-go/interlink/internal/statefile"
)

// Found is what the mailbox keeps of one message (see [Mailbox.Find]).
type Found struct {
	// Record is the message with its petname and state. Without Text,
	// its Message holds the sender, msg_id and signed time only, and
	// Peer is empty.
	Record Record
	// Text reports whether Record.Message is the whole message as it
	// arrived.
	Text bool
	// NotKept reports, for a message without text, that its sender had
	// reached its share of the history on the day of the message.
	NotKept bool
}

// view runs fn with the lock held on the current document, with its
// tombstones brought up to date and the records they already name left
// out, changing nothing.
func (m *Mailbox) view(fn func(d *document) error) error {
	return statefile.Locked(context.Background(), m.lockPath, func() error {
		d, err := m.read()
		if err != nil {
			return err
		}
		if err := m.tombs.refresh(); err != nil {
			return err
		}
		d.tombs = m.tombs
		d.records = slices.DeleteFunc(d.records, func(r Record) bool {
			_, gone := m.tombs.get(r.Receipt())
			return gone
		})
		return fn(&d)
	})
}

// History returns the inbound half of the conversation with peer: every
// message whose stored petname equals peer, in any state: the unread
// records, and the messages signed inside the replay window
// ([protocol.MaxPast]) that were acknowledged or superseded since, whose
// text the history keeps. They are sorted by signed time, then msg_id and
// sender, newest last, keeping the last limit of them; limit <= 0 means
// all. A superseded message has SupersededBy set; its State is
// [StateAcknowledged] once acknowledged.
//
// The history is the folder <session>.history beside the mailbox file:
// one file per UTC day of signed time, to which the text of a message is
// appended, in the same locked change, when it stops being unread (or
// arrives already superseded). Each sender has a share of each day: at
// most [MaxHistoryLines] messages and [MaxHistoryBytes] bytes. The text
// of a message beyond it is not kept; its tombstone is written as usual,
// and a marker line, once per sender and day, makes the day appear in
// what [Mailbox.NotKept] returns. A day's file is removed whole, under the lock,
// by the first change or read of the history after every message it can
// hold has left the window. The history only shows: which messages are
// new is decided by the records and the tombstones alone.
//
// With consume set, exactly the returned messages are acknowledged in the
// same locked step (the notice is cleared as by [Mailbox.Acknowledge]),
// and the returned records show their new state.
//
// Outbound messages are not in the mailbox. A caller that merges them in
// before applying the limit should call History with consume false and then
// pass the receipts of the inbound records it kept to [Mailbox.Acknowledge].
func (m *Mailbox) History(peer string, limit int, consume bool) ([]Record, error) {
	var out []Record
	if !consume {
		err := m.view(func(d *document) error {
			var err error
			out, err = m.conversation(d, peer, limit)
			return err
		})
		return out, err
	}
	err := m.update(context.Background(), false, func(d *document) (bool, error) {
		var err error
		if out, err = m.conversation(d, peer, limit); err != nil {
			return false, err
		}
		kept := make(map[Receipt]bool, len(out))
		for i := range out {
			kept[out[i].Receipt()] = true
			out[i].State = StateAcknowledged
		}
		changed := m.acknowledgeIn(d, kept) > 0
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

// NotKept returns the days (UTC, as 2006-01-02) inside the replay window
// on which a sender known as peer reached its share of the history
// ([MaxHistoryLines], [MaxHistoryBytes]), oldest first: the text of its
// further consumed or superseded messages of those days is not kept, and
// [Mailbox.History] does not return them.
func (m *Mailbox) NotKept(peer string) (days []string, err error) {
	err = m.view(func(*document) error {
		if err := m.hist.Refresh(identity.Millis(m.now())); err != nil {
			return err
		}
		days = m.hist.FullDays(peer)
		return nil
	})
	return days, err
}

// conversation selects and orders the messages of peer as
// [Mailbox.History] describes. The lock is held and d's tombstones are
// current.
func (m *Mailbox) conversation(d *document, peer string, limit int) ([]Record, error) {
	now := identity.Millis(m.now())
	if err := m.hist.Refresh(now); err != nil {
		return nil, err
	}
	type item struct {
		rec   *Record // in the document: unread, or not yet in the history
		live  bool    // rec is unread
		rc    Receipt
		entry history.Entry
		ts    uint64
	}
	var items []item
	seen := make(map[Receipt]bool)
	// Besides the unread records, the document may hold messages on
	// their way to the history: kept whole by a file of the earlier
	// shape, or taken out by the change under way.
	for k, recs := range [][]Record{d.records, d.legacy, d.retired} {
		for i := range recs {
			r := &recs[i]
			rc := r.Receipt()
			if r.Peer != peer || seen[rc] || (k > 0 && expiredAt(r.Message.TS, now)) {
				continue
			}
			seen[rc] = true
			items = append(items, item{rec: r, live: k == 0, rc: rc, ts: r.Message.TS})
		}
	}
	for k, e := range m.hist.Entries() {
		if rc := Receipt(k); e.Peer == peer && !seen[rc] && !expiredAt(e.TS, now) {
			items = append(items, item{rc: rc, entry: e, ts: e.TS})
		}
	}
	slices.SortFunc(items, func(a, b item) int {
		return cmp.Or(cmp.Compare(a.ts, b.ts), cmp.Compare(a.rc.MsgID, b.rc.MsgID), cmp.Compare(a.rc.Sender, b.rc.Sender))
	})
	if limit > 0 && len(items) > limit {
		items = items[len(items)-limit:]
	}
	out := make([]Record, 0, len(items))
	for _, it := range items {
		if it.rec != nil {
			r := *it.rec
			if !it.live {
				m.tombs.settle(&r)
			}
			out = append(out, r)
			continue
		}
		r, ok, err := historyRecord(m.hist, it.rc, it.entry)
		if err != nil {
			return nil, err
		}
		if ok {
			m.tombs.settle(&r)
			out = append(out, r)
		}
	}
	return out, nil
}

// historyRecord returns the message of the entry e of rc in h as a
// record, with the petname and the state it had when it stopped being
// unread; false when its line cannot be read back as that message.
func historyRecord(h *history.Log, rc Receipt, e history.Entry) (Record, bool, error) {
	l, ok, err := h.Read(history.Key(rc), e)
	if !ok || err != nil {
		return Record{}, false, err
	}
	return Record{Message: l.Message, Peer: l.Peer, State: State(l.State), SupersededBy: l.SupersededBy, raw: l.Raw}, true, nil
}

// settle gives r, read from the history, the state its tombstone in t has
// now: a message superseded before it was acknowledged is acknowledged
// since.
func (t *tombLog) settle(r *Record) {
	tb, ok := t.get(r.Receipt())
	if !ok {
		return
	}
	if tb.Acknowledged {
		r.State = StateAcknowledged
	}
	if tb.SupersededBy != "" {
		r.SupersededBy = tb.SupersededBy
	}
}

// Find returns what the mailbox keeps of the first message with msgID,
// from any sender: an unread record, in file order; else a message
// consumed or superseded inside the replay window, with its text when the
// history kept it (see [Mailbox.History]), else its tombstone. It reports
// false when the mailbox knows no such message.
func (m *Mailbox) Find(msgID string) (Found, bool, error) {
	return m.find(func(rc Receipt) bool { return rc.MsgID == msgID })
}

// FindReceipt is [Mailbox.Find] for the message the receipt rc names.
func (m *Mailbox) FindReceipt(rc Receipt) (Found, bool, error) {
	return m.find(func(r Receipt) bool { return r == rc })
}

func (m *Mailbox) find(match func(Receipt) bool) (f Found, ok bool, err error) {
	// Unread records first, without the lock, as [Mailbox.Receive] reads
	// them: a damaged tombstone log or history does not hide them.
	d, err := m.read()
	if err != nil {
		return Found{}, false, err
	}
	for i := range d.records {
		if match(d.records[i].Receipt()) {
			return Found{Record: d.records[i], Text: true}, true, nil
		}
	}
	err = m.view(func(d *document) error {
		now := identity.Millis(m.now())
		for i := range d.legacy {
			if r := &d.legacy[i]; match(r.Receipt()) && !expiredAt(r.Message.TS, now) {
				f, ok = Found{Record: *r, Text: true}, true
				return nil
			}
		}
		if err := m.hist.Refresh(now); err != nil {
			return err
		}
		for _, t := range m.tombs.list {
			rc := t.Receipt()
			if expiredAt(t.TS, now) || !match(rc) {
				continue
			}
			ok = true
			if e, in := m.hist.Entry(history.Key(rc)); in {
				r, text, err := historyRecord(m.hist, rc, e)
				if err != nil {
					return err
				}
				if text {
					m.tombs.settle(&r)
					f = Found{Record: r, Text: true}
					return nil
				}
			}
			f = Found{Record: Record{Message: identity.Message{From: t.Sender, MsgID: t.MsgID, TS: t.TS},
				State: t.State(), SupersededBy: t.SupersededBy}, NotKept: m.hist.Full(t.Sender, t.TS)}
			return nil
		}
		// A superseded update that left no tombstone is in the history
		// only; the first kept wins.
		var best *history.Entry
		var bestRC Receipt
		for k, e := range m.hist.Entries() {
			if match(Receipt(k)) && !expiredAt(e.TS, now) && (best == nil || e.Seq < best.Seq) {
				best, bestRC = &e, Receipt(k)
			}
		}
		if best == nil {
			return nil
		}
		r, text, err := historyRecord(m.hist, bestRC, *best)
		if err != nil || !text {
			return err
		}
		f, ok = Found{Record: r, Text: true}, true
		return nil
	})
	if err != nil {
		return Found{}, false, err
	}
	return f, ok, nil
}

// Bounds of the history, per sender and day (see [Mailbox.History]).
const (
	// MaxHistoryLines is the most messages of one sender whose text the
	// history keeps for one day (UTC, by signed time). The text of a
	// further message of that sender and day is not kept.
	MaxHistoryLines = history.MaxLines
	// MaxHistoryBytes is the most bytes of history lines one sender may
	// have for one day. The text of a message that would go beyond it is
	// not kept.
	MaxHistoryBytes = history.MaxBytes
)
