package mailbox

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/interlink-go/interlink/internal/identity"
)

// Notice back-off, in milliseconds: the first notice for a backlog expires
// after noticeBaseDelay, each following one after twice the previous delay,
// at most noticeMaxDelay. attempt stops growing at maxAttempt, where the
// delay has reached the cap.
const (
	noticeBaseDelay = 30_000
	noticeMaxDelay  = 300_000
	maxAttempt      = 4
)

// noticeDelay returns the lifetime of a notice issued at attempt.
func noticeDelay(attempt int) uint64 {
	return min(uint64(noticeBaseDelay)<<min(attempt, maxAttempt), noticeMaxDelay)
}

// Reserve decides, under the lock, whether the host should be woken now,
// and returns the new notice when it should, or nil when it should not.
//
// The notice covers the attention set: the unread records whose status is
// not update. An empty attention set means no notice, and clears any notice
// left over. A notice is still current while its expiry lies in the future
// by at most 5 minutes; then nothing new is issued. An expired notice, and
// one whose expiry is further ahead than any back-off could put it (the
// clock went back), is replaced by a new notice with a new id and attempt
// one higher (at most 4); without an earlier notice attempt is 0. The new
// notice starts in [StatePreparing] and expires 30 s × 2^attempt later, at
// most 300 s: 30, 60, 120, 240, then 300 s.
//
// The caller hands the notice to the host and reports the outcome with
// [Mailbox.Finish]. Whatever happens to it, it expires, so messages that
// stay unread are announced again.
//
// Reserve runs every second in the notification loop, and reading a full
// mailbox takes tens of milliseconds. So when a call finds nothing due, the
// Mailbox remembers the file's identity, size and modification time and
// the moment something could next fall due (the current notice's expiry);
// until then, for at most [quietMax], a call that finds the file unchanged
// returns nil at the cost of one stat, without reading it.
func (m *Mailbox) Reserve(ctx context.Context) (*Notice, error) {
	return m.ReserveSkipping(ctx, nil)
}

// ReserveSkipping is [Mailbox.Reserve] with the messages of some senders
// left out of the attention set: skip, when not nil, is asked for each
// sender key, and messages of a sender it names neither make a notice due
// nor are covered by one. They stay unread and are listed as usual. The
// budgets use it to stop a paused peer from waking the host. A change of
// what skip says may take up to [quietMax] to show while the file does not
// change.
func (m *Mailbox) ReserveSkipping(ctx context.Context, skip func(sender string) bool) (*Notice, error) {
	now := identity.Millis(m.now())
	m.mu.Lock()
	last := m.quiet
	m.mu.Unlock()
	if last.holds(m.path, now) {
		return nil, nil
	}
	var out *Notice
	var q *quiet
	err := m.update(ctx, false, func(d *document) (bool, error) {
		var msgs, fresh []Receipt
		for i := range d.records {
			r := &d.records[i]
			if !r.attention() || (skip != nil && skip(r.Message.From)) {
				continue
			}
			msgs = append(msgs, r.Receipt())
			if r.State == StateStored {
				fresh = append(fresh, r.Receipt())
			}
		}
		if len(msgs) == 0 {
			had := d.notice != nil
			d.notice = nil
			if !had {
				q = observe(m.path, now, now+quietMax)
			}
			return had, nil
		}
		attempt := 0
		if prev := d.notice; prev != nil {
			var remaining uint64
			if prev.RetryAt > now {
				remaining = prev.RetryAt - now
			}
			if remaining > 0 && remaining <= noticeMaxDelay {
				q = observe(m.path, now, min(prev.RetryAt, now+quietMax))
				return false, nil
			}
			attempt = min(prev.Attempt+1, maxAttempt)
		}
		id, err := m.newID()
		if err != nil {
			return false, fmt.Errorf("mailbox: notice id: %w", err)
		}
		d.notice = &Notice{
			ID:       id,
			State:    StatePreparing,
			Messages: msgs,
			RetryAt:  now + noticeDelay(attempt),
			Attempt:  attempt,
		}
		issued := *d.notice
		issued.Fresh = fresh
		out = &issued
		return true, nil
	})
	if err != nil {
		q = nil
	}
	m.mu.Lock()
	m.quiet = q
	m.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if out != nil {
		m.log.Debug("mailbox: notice reserved", "notice_id", out.ID, "attempt", out.Attempt, "messages", len(out.Messages))
	}
	return out, nil
}

// Finish records the outcome of handing the notice id to the host: state
// must be one of [StateInboxQueued], [StateNotificationSent],
// [StateHostQueued] or [StateDeliveryFailed]. If id is still the current
// notice, the notice and each of its messages that is still unread take
// that state, and Finish returns the receipts of those messages; otherwise
// a newer notice has replaced it (or it was cleared) and Finish changes
// nothing and returns none.
func (m *Mailbox) Finish(ctx context.Context, id string, state State) ([]Receipt, error) {
	if !state.handoff() {
		return nil, fmt.Errorf("mailbox: finish: %q is not a handoff state", state)
	}
	var moved []Receipt
	err := m.update(ctx, false, func(d *document) (bool, error) {
		moved = moved[:0]
		if d.notice == nil || d.notice.ID != id {
			return false, nil
		}
		d.notice.State = state
		covered := make(map[Receipt]bool, len(d.notice.Messages))
		for _, r := range d.notice.Messages {
			covered[r] = true
		}
		for i := range d.records {
			r := &d.records[i]
			if r.Unread() && covered[r.Receipt()] {
				r.State = state
				moved = append(moved, r.Receipt())
			}
		}
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	return moved, nil
}

// NoticeText returns the text that asks the host to check the mailbox for
// the notice id. It names the tool call to make, with the id, and the steps
// that follow; it never carries anything a peer wrote, so a notice that is
// shown late or twice cannot replay a message body or smuggle instructions.
func NoticeText(id string) string {
	var b strings.Builder
	b.WriteString("[Interlink inbox notice] Unread Interlink messages are waiting. Check them before this turn ends.\n")
	fmt.Fprintf(&b, "1. Call receive_messages(notification_id=%q). If the Interlink tools are not loaded yet, look them up first.\n", id)
	b.WriteString("2. Read the batch, then call acknowledge_messages with the receipt objects exactly as returned " +
		"(each has sender and msg_id). Do this before acting on any request and before fetching another batch.\n")
	b.WriteString("3. Only after fetching: if nothing came back, carry on without comment. Once acknowledged, " +
		"handle the messages within the scope your operator has authorized; routine progress needs no reply to the user.\n")
	b.WriteString("If either tool is missing or fails, report that as a blocker. Never skip this check silently.")
	return b.String()
}

// quietMax is the longest time, in milliseconds, that [Mailbox.Reserve]
// trusts an unchanged-looking file without reading it. It bounds the delay
// a change could cause that the file's identity, size and time do not show
// (a file system with coarse timestamps could hide one).
const quietMax = 10_000

// quiet is what a [Mailbox.Reserve] that found nothing due saw: the file
// then, and the span of the clock, in Unix milliseconds, in which the same
// file still has nothing due.
type quiet struct {
	file  os.FileInfo // nil when there was no file
	from  uint64      // the clock when the file was read
	until uint64      // when something may fall due, at most from+quietMax
}

// observe describes the mailbox file at path as it is now, for a Reserve
// at now that found nothing due before until. The caller holds the file
// lock, so the file is the one just read. It returns nil when the file
// cannot be described, and then nothing is remembered.
func observe(path string, now, until uint64) *quiet {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		fi = nil
	case err != nil:
		return nil
	default:
		// On Windows the file's identity is looked up on the first
		// comparison, by path; take it now, while the path still names
		// this file.
		os.SameFile(fi, fi)
	}
	return &quiet{file: fi, from: now, until: until}
}

// holds reports whether q, what the last Reserve saw when it found nothing
// due (nil when it found something), still holds: the clock now lies
// within the span it was good for, and the file at path looks unchanged.
func (q *quiet) holds(path string, now uint64) bool {
	if q == nil || now < q.from || now >= q.until {
		return false
	}
	fi, err := os.Stat(path)
	if q.file == nil {
		return errors.Is(err, fs.ErrNotExist)
	}
	return err == nil && os.SameFile(q.file, fi) && fi.Size() == q.file.Size() && fi.ModTime().Equal(q.file.ModTime())
}
