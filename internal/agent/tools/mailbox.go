package tools

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/interlink-go/interlink/internal/e2e"
	"github.com/interlink-go/interlink/internal/mailbox"
	"github.com/interlink-go/interlink/internal/outbox"
	"github.com/interlink-go/interlink/internal/render"
)

// Mailbox is the tools that read what this session received and follow
// what it sent: receive_messages, read_message, acknowledge_messages,
// message_status, list_pending and conversation_history. Everything they
// use belongs to the session.
type Mailbox struct {
	// Session gives what the tools use of the bound session.
	Session Scope[MailboxSession]
}

// MailboxSession is what the mailbox tools use of the bound session.
type MailboxSession struct {
	// Mailbox holds what the session received.
	Mailbox *mailbox.Mailbox
	// Shown remembers which received messages this process showed its
	// model; only those can be acknowledged by receipt.
	Shown *mailbox.Shown
	// Outbox holds what the session sent, and the log of its delivery.
	Outbox *outbox.Outbox
	// Heard, if set, holds the stages end-to-end receipts told of sent
	// messages; nil when receipts are off.
	Heard *e2e.Heard
	// Reached, if set, is told that received messages reached a stage:
	// surfaced when a tool result shows them, acknowledged when they are
	// consumed (package e2e).
	Reached func(stage e2e.Stage, receipts []mailbox.Receipt)
}

// reached tells s.Reached, if set, that receipts reached stage.
func (s *MailboxSession) reached(stage e2e.Stage, receipts []mailbox.Receipt) {
	if s.Reached != nil && len(receipts) > 0 {
		s.Reached(stage, receipts)
	}
}

// heardLine returns the receipt line of the sent message msgID, or "" when
// no receipt told of it.
func (s *MailboxSession) heardLine(msgID string) (string, error) {
	if s.Heard == nil {
		return "", nil
	}
	st, ok, err := s.Heard.Get(msgID)
	if err != nil || !ok {
		return "", err
	}
	return e2e.Describe(st, s.Heard.Now()), nil
}

// noUnread starts the answer of receive_messages when nothing is unread.
const noUnread = "No unread messages. Carry on silently; no reply is needed."

// Bounds of the fetching tools' arguments.
const (
	defaultLimit = 20
	maxLimit     = 100
	maxReceipts  = 100
)

// MaxAnswer bounds the bytes of the messages one receive_messages or
// conversation_history answer shows, so that a batch of long messages
// stays within what a host puts before the model from one tool call
// (Claude Code's default limit is 25,000 tokens). An answer always shows at
// least one message, itself bounded by [render.MaxText]; the messages left
// out are neither shown nor consumed, and a note says how many there are.
const MaxAnswer = 48 << 10

// fitAnswer returns how many of parts, from the first, fit together in
// MaxAnswer bytes with a newline between each two; at least one.
func fitAnswer(parts []string) int {
	size := 0
	for i, p := range parts {
		if size += len(p) + 1; i > 0 && size-1 > MaxAnswer {
			return i
		}
	}
	return len(parts)
}

// Tools returns the mailbox tools.
func (mb *Mailbox) Tools() []Tool {
	return []Tool{
		Bound(mcp.NewTool("message_status",
			mcp.WithDescription("Local state of one message, by msg_id. Sent messages: pending, then bus_accepted (a relay took it; "+
				"whether the receiver read it is unknown unless it sends signed receipts: then the furthest of receiver_stored, "+
				"receiver_surfaced, receiver_acknowledged it signed), or rejected. Received messages: receiver_stored, inbox_queued, notification_sent, "+
				"host_queued, delivery_failed, receiver_acknowledged. Handing a notice to the host never proves the model read or finished anything."),
			mcp.WithString("msg_id", mcp.Required(), mcp.Description("The message id.")),
		), mb.Session, mb.messageStatus),
		Bound(mcp.NewTool("receive_messages",
			mcp.WithDescription("Fetch unread peer messages without consuming them (questions and results before progress updates). "+
				"After reading, pass the exact receipts to acknowledge_messages, then fetch again if the batch was full. "+
				"Nothing is lost if this answer goes missing. An empty result means carry on silently. Progress needs no reply; "+
				"point out questions, failures and results. Each receipt names the sender's public key, not its petname."),
			mcp.WithString("notification_id", mcp.Description("Id from the inbox notice, if there was one; advisory.")),
			mcp.WithInteger("limit", mcp.Min(1), mcp.Max(maxLimit), mcp.Description(descLimit)),
		), mb.Session, mb.receiveMessages),
		Bound(mcp.NewTool("read_message",
			mcp.WithDescription(fmt.Sprintf("Read one received message by its receipt, from a byte offset, in any state for 24 hours. "+
				"A tool result shows at most %d bytes of a message's text and says when there is more; pass the receipt's sender and "+
				"msg_id and the offset it gives to read on. Changes nothing; acknowledge the message as usual.", render.MaxText)),
			mcp.WithString("sender", mcp.Required(), mcp.Description("Sender public key from the receipt.")),
			mcp.WithString("msg_id", mcp.Required(), mcp.Description("msg_id from the receipt.")),
			mcp.WithInteger("offset", mcp.Min(0), mcp.Max(math.MaxInt32), mcp.Description("Byte offset in the text to start at (default 0).")),
		), mb.Session, mb.readMessage),
		Bound(mcp.NewTool("acknowledge_messages",
			mcp.WithDescription("Consume messages you have read, by their exact receipts ({sender, msg_id} as returned). "+
				"Only messages this session's tools showed you are consumed. "+
				"Safe to repeat; messages that arrived later stay unread. Acknowledging means received, not acted on."),
			mcp.WithArray("messages", mcp.Required(), mcp.Description("1 to 100 receipts."), mcp.MinItems(1), mcp.MaxItems(maxReceipts),
				mcp.Items(map[string]any{
					"type": "object",
					"properties": map[string]any{
						"sender": map[string]any{"type": "string", "description": "Sender public key from the receipt."},
						"msg_id": map[string]any{"type": "string"},
					},
					"required": []string{"sender", "msg_id"},
				})),
		), mb.Session, mb.acknowledgeMessages),
		Bound(mcp.NewTool("conversation_history",
			mcp.WithDescription("Recent messages with one peer, both directions, newest last. Read-only unless consume=true: "+
				"pass it when you act on the returned messages so they are not delivered to you again. Received messages appear "+
				"in any state for 24 hours, each labelled with its state; superseded progress is labelled 'superseded by <msg_id>'. "+
				"History cannot take back a notice the host already has."),
			mcp.WithString("peer", mcp.Required(), mcp.Description("Petname, or 'self'.")),
			mcp.WithInteger("limit", mcp.Min(1), mcp.Max(maxLimit), mcp.Description(descLimit)),
			mcp.WithBoolean("consume", mcp.Description("Acknowledge the returned received messages (default false).")),
		), mb.Session, mb.conversationHistory),
		Anytime(mcp.NewTool("list_pending",
			mcp.WithDescription("Messages still waiting for a relay to take them, and messages every relay refused."),
		), mb.Session, mb.listPending),
	}
}

type receiveArgs struct {
	NotificationID string `json:"notification_id"` // advisory; unused
	Limit          whole  `json:"limit"`
}

func (*Mailbox) receiveMessages(_ context.Context, s *MailboxSession, a receiveArgs) (string, error) {
	recs, err := s.Mailbox.Receive(a.Limit.or(defaultLimit))
	if err != nil {
		return "", localState(err)
	}
	if len(recs) == 0 {
		return noUnread, nil
	}
	lines := make([]string, len(recs))
	for i := range recs {
		lines[i] = render.Record(&recs[i])
	}
	n := fitAnswer(lines)
	showing(s, recs[:n])
	if n < len(lines) {
		lines = append(lines[:n], fmt.Sprintf("[interlink] %d more unread messages of this batch are not shown, to keep this answer under %d KiB. "+
			"Acknowledge the messages above, then call receive_messages again for the rest.", len(lines)-n, MaxAnswer>>10))
	}
	return strings.Join(lines, "\n"), nil
}

type readArgs struct {
	Sender string `json:"sender"`
	MsgID  string `json:"msg_id"`
	Offset whole  `json:"offset"`
}

func (*Mailbox) readMessage(_ context.Context, s *MailboxSession, a readArgs) (string, error) {
	f, ok, err := s.Mailbox.FindReceipt(mailbox.Receipt{Sender: a.Sender, MsgID: a.MsgID})
	if err != nil {
		return "", localState(err)
	}
	switch {
	case !ok:
		return "", invalidf("no received message with that receipt is kept in the mailbox; pass sender and msg_id exactly as the receipt gives them")
	case !f.Text:
		return textlessLine(&f), nil
	}
	showing(s, []mailbox.Record{f.Record})
	return render.RecordFrom(&f.Record, int(a.Offset)), nil
}

type acknowledgeArgs struct {
	Messages []mailbox.Receipt `json:"messages"`
}

// showing records that the tool result being built shows recs to the
// model, so that their receipts may be acknowledged.
func showing(s *MailboxSession, recs []mailbox.Record) {
	receipts := make([]mailbox.Receipt, len(recs))
	for i := range recs {
		receipts[i] = recs[i].Receipt()
		s.Shown.Add(receipts[i])
	}
	s.reached(e2e.Surfaced, receipts)
}

// acknowledgeMessages consumes only messages this process has shown the
// model (see [mailbox.Shown]): a receipt line is text, and text a peer
// wrote can look like one. A receipt of anything else consumes nothing.
func (*Mailbox) acknowledgeMessages(_ context.Context, s *MailboxSession, a acknowledgeArgs) (string, error) {
	shown, unshown := s.Shown.Split(a.Messages)
	n, err := s.Mailbox.Acknowledge(shown)
	if err != nil {
		return "", localState(err)
	}
	s.reached(e2e.Acknowledged, shown)
	// The sentence is the original's: scripts match "Acknowledged N ".
	out := fmt.Sprintf("Acknowledged %d previously unacknowledged messages. "+
		"Repeated or unknown receipts change nothing; messages that arrived since stay unread.", n)
	if len(unshown) > 0 {
		out += fmt.Sprintf(" %d of the receipts name no message this session has shown you, so they consumed nothing; "+
			"such messages stay unread until receive_messages shows them.", len(unshown))
	}
	return out, nil
}

type statusArgs struct {
	MsgID string `json:"msg_id"`
}

func (*Mailbox) messageStatus(_ context.Context, s *MailboxSession, a statusArgs) (string, error) {
	f, found, err := s.Mailbox.Find(a.MsgID)
	if err != nil {
		return "", localState(err)
	}
	// Both directions are shown when both know the id: a peer can reuse the
	// id of a message it received, and must not hide the sent one's state.
	var parts []string
	switch {
	case found && f.Text:
		showing(s, []mailbox.Record{f.Record})
		parts = append(parts, render.Record(&f.Record))
	case found:
		parts = append(parts, textlessLine(&f))
	}
	e, ok, err := s.Outbox.Status(a.MsgID)
	if err != nil {
		return "", localState(err)
	}
	if ok {
		heard, err := s.heardLine(a.MsgID)
		if err != nil {
			return "", localState(err)
		}
		if heard == "" {
			heard = "receiver acknowledgement unknown (no remote receipt)"
		}
		parts = append(parts, logLine(&e)+"\n"+heard)
	}
	if len(parts) == 0 {
		return fmt.Sprintf("no message with msg_id %q is known locally", a.MsgID), nil
	}
	return strings.Join(parts, "\n"), nil
}

// textlessLine renders what the mailbox keeps of a consumed or superseded
// message whose text the history did not keep: its receipt line, as
// [render.Record] gives it, and why the text is missing.
func textlessLine(f *mailbox.Found) string {
	why := "(consumed or superseded; its text is not in the history)"
	if f.NotKept {
		why = fmt.Sprintf("(consumed or superseded; its text is not kept: that day its sender reached what the history keeps "+
			"of one sender, %d messages or %d MiB)", mailbox.MaxHistoryLines, mailbox.MaxHistoryBytes>>20)
	}
	return render.ReceiptLine(&f.Record) + "\n" + why
}

// logLine renders an entry of the outbox's log.
func logLine(e *outbox.Entry) string {
	s := fmt.Sprintf("→ %s [%s] (msg_id %s): %s", e.Peer, e.State, e.MsgID, e.Text)
	switch {
	case e.State == outbox.StateRejected && e.LastError != "":
		s += "\nrejected by every relay: " + e.LastError
	case e.State == outbox.StateExpired:
		s += "\nnot sent: " + e.LastError
	}
	return s
}

// listPending works before binding too: an unbound session has sent
// nothing.
func (*Mailbox) listPending(_ context.Context, s *MailboxSession, _ none) (string, error) {
	var pend []outbox.Entry
	if s != nil {
		var err error
		if pend, err = s.Outbox.Pending(); err != nil {
			return "", localState(err)
		}
	}
	if len(pend) == 0 {
		return "Nothing is waiting: a relay has taken every message sent.", nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d pending:", len(pend))
	for _, e := range pend {
		fmt.Fprintf(&b, "\n→ %s (msg_id %s)", e.Peer, e.MsgID)
		switch e.State {
		case outbox.StateRejected:
			fmt.Fprintf(&b, " rejected: %s", e.LastError)
		case outbox.StateExpired:
			fmt.Fprintf(&b, " expired: %s", e.LastError)
		}
		heard, err := s.heardLine(e.MsgID)
		if err != nil {
			return "", localState(err)
		}
		if heard != "" {
			b.WriteString("\n  " + heard)
		}
	}
	return b.String(), nil
}

type historyArgs struct {
	Peer    string `json:"peer"`
	Limit   whole  `json:"limit"`
	Consume bool   `json:"consume"`
}

// historyItem is one message of a conversation, either direction.
type historyItem struct {
	ts    uint64
	msgID string
	out   *outbox.Entry
	in    *mailbox.Record
}

func (*Mailbox) conversationHistory(_ context.Context, s *MailboxSession, a historyArgs) (string, error) {
	limit := a.Limit.or(defaultLimit)
	var items []historyItem
	sent, err := s.Outbox.Log(a.Peer, limit)
	if err != nil {
		return "", localState(err)
	}
	for _, e := range sent {
		items = append(items, historyItem{ts: e.TS, msgID: e.MsgID, out: &e})
	}
	// The last limit of the merged list hold at most limit received
	// messages, the newest.
	recs, err := s.Mailbox.History(a.Peer, limit, false)
	if err != nil {
		return "", localState(err)
	}
	notKept, err := s.Mailbox.NotKept(a.Peer)
	if err != nil {
		return "", localState(err)
	}
	for i := range recs {
		r := &recs[i]
		items = append(items, historyItem{ts: r.Message.TS, msgID: r.Message.MsgID, in: r})
	}
	slices.SortStableFunc(items, func(x, y historyItem) int {
		return cmp.Or(cmp.Compare(x.ts, y.ts), cmp.Compare(x.msgID, y.msgID))
	})
	if len(items) > limit {
		items = items[len(items)-limit:]
	}
	var note string
	if len(notKept) > 0 {
		note = fmt.Sprintf("[interlink] On %s the sender known as %s reached what the history keeps of one sender "+
			"in a day (%d messages or %d MiB): its messages read or superseded after that are not shown here. "+
			"message_status still gives their state.", strings.Join(notKept, ", "), render.AttrValue(a.Peer),
			mailbox.MaxHistoryLines, mailbox.MaxHistoryBytes>>20)
	}
	if len(items) == 0 {
		if note != "" {
			return fmt.Sprintf("no history with %s\n%s", a.Peer, note), nil
		}
		return fmt.Sprintf("no history with %s", a.Peer), nil
	}
	// Rendered newest first, as consuming would leave them, so that the
	// bound keeps the newest and nothing left out is consumed.
	shown := make([]string, len(items))
	for i, it := range items {
		j := len(items) - 1 - i
		if it.out != nil {
			shown[j] = logLine(it.out)
			heard, err := s.heardLine(it.out.MsgID)
			if err != nil {
				return "", localState(err)
			}
			if heard != "" {
				shown[j] += "\n" + heard
			}
			continue
		}
		r := *it.in
		if a.Consume {
			r.State = mailbox.StateAcknowledged
		}
		shown[j] = render.Record(&r)
	}
	n := fitAnswer(shown)
	left := len(items) - n
	items, shown = items[left:], shown[:n]
	slices.Reverse(shown)
	var receipts []mailbox.Receipt
	for _, it := range items {
		if it.in != nil {
			s.Shown.Add(it.in.Receipt())
			receipts = append(receipts, it.in.Receipt())
		}
	}
	s.reached(e2e.Surfaced, receipts)
	if a.Consume {
		if err := consume(s.Mailbox, items); err != nil {
			return "", err
		}
		s.reached(e2e.Acknowledged, receipts)
	}
	lines := make([]string, 0, len(shown)+2)
	if a.Consume {
		lines = append(lines, "The received messages below are now acknowledged.")
	}
	if left > 0 {
		lines = append(lines, fmt.Sprintf("[interlink] %d older messages are not shown, to keep this answer under %d KiB; "+
			"none of them was consumed. Unread ones come with receive_messages.", left, MaxAnswer>>10))
	}
	if note != "" {
		lines = append(lines, note)
	}
	lines = append(lines, shown...)
	return strings.Join(lines, "\n"), nil
}

// consume acknowledges the received messages among items and marks them
// so in items.
func consume(mb *mailbox.Mailbox, items []historyItem) error {
	var receipts []mailbox.Receipt
	for _, it := range items {
		if it.in != nil {
			receipts = append(receipts, it.in.Receipt())
		}
	}
	if len(receipts) == 0 {
		return nil
	}
	if _, err := mb.Acknowledge(receipts); err != nil {
		return localState(err)
	}
	for _, it := range items {
		if it.in != nil {
			it.in.State = mailbox.StateAcknowledged
		}
	}
	return nil
}
