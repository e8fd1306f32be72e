package mailbox

import (
	"fmt"
	"strings"
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
func (m *Mailbox) Reserve() (*Notice, error) {
	now := m.nowMS()
	var out *Notice
	err := m.update(false, func(d *document) (bool, error) {
		var msgs []Receipt
		for i := range d.records {
			if d.records[i].attention() {
				msgs = append(msgs, d.records[i].Receipt())
			}
		}
		if len(msgs) == 0 {
			had := d.notice != nil
			d.notice = nil
			return had, nil
		}
		attempt := 0
		if prev := d.notice; prev != nil {
			var remaining uint64
			if prev.RetryAt > now {
				remaining = prev.RetryAt - now
			}
			if remaining > 0 && remaining <= noticeMaxDelay {
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
		out = d.notice
		return true, nil
	})
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
// that state; otherwise a newer notice has replaced it (or it was cleared)
// and Finish changes nothing.
func (m *Mailbox) Finish(id string, state State) error {
	if !state.handoff() {
		return fmt.Errorf("mailbox: finish: %q is not a handoff state", state)
	}
	return m.update(false, func(d *document) (bool, error) {
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
			}
		}
		return true, nil
	})
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
