package delivery

import (
	"context"
	"encoding/json"

	"github.com/interlink-go/interlink/internal/budget"
	"github.com/interlink-go/interlink/internal/inbox"
	"github.com/interlink-go/interlink/internal/mailbox"
	"github.com/interlink-go/interlink/internal/render"
)

// Inbox is the default Claude Code sink: every record becomes a line of the
// session's notice inbox, which the Stop-hook listener reads.
type Inbox struct{ box *inbox.Inbox }

// NewInbox returns the sink for box, creating the inbox file if it is
// missing (an existing file and its cursor are kept).
func NewInbox(box *inbox.Inbox) (*Inbox, error) {
	if err := box.Create(); err != nil {
		return nil, err
	}
	return &Inbox{box: box}, nil
}

// Notice appends the notice as a record from [protocol.SystemSender].
func (s *Inbox) Notice(ctx context.Context, id, text string) (mailbox.State, error) {
	if err := s.Text(ctx, NoticeRecord(id, text)); err != nil {
		return "", err
	}
	return mailbox.StateInboxQueued, nil
}

// Text appends r.
func (s *Inbox) Text(_ context.Context, r Record) error {
	line, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return s.box.Append(line)
}

// ChannelMethod is the notification Claude Code shows as a channel message.
const ChannelMethod = "notifications/claude/channel"

// Channel is the Claude Code channels sink: every record is sent to the
// host as a channel notification. Send writes one notification to the MCP
// client; success means it was written, not that the host showed it.
type Channel struct {
	Send func(method string, params map[string]any) error
}

// Notice sends the notice text with meta sender and msg_id.
func (s Channel) Notice(ctx context.Context, id, text string) (mailbox.State, error) {
	if err := s.Text(ctx, NoticeRecord(id, text)); err != nil {
		return "", err
	}
	return mailbox.StateNotificationSent, nil
}

// Text sends r: content is the text, meta holds sender and msg_id and, when
// set, task_id, status and in_reply_to.
//
// Claude Code shows channel content to the model as it is, without the
// attributed block the other sinks render, so the text goes through
// [render.Inert] and every meta value through [render.AttrValue] here. The
// sender is a fixed word or a stored petname; one that [render.SenderAttr]
// would not show is sent as no sender at all, never changed. A channel
// message starts a turn, so the content starts with [budget.WakeLine]:
// that turn is not the operator's.
func (s Channel) Text(_ context.Context, r Record) error {
	meta := map[string]any{"msg_id": render.AttrValue(r.MsgID)}
	if sender, ok := render.SenderAttr(r.Sender); ok {
		meta["sender"] = sender
	}
	for k, v := range map[string]string{"task_id": r.TaskID, "status": r.Status, "in_reply_to": r.InReplyTo} {
		if v = render.AttrValue(v); v != "" {
			meta[k] = v
		}
	}
	return s.Send(ChannelMethod, map[string]any{"content": budget.MarkWake(render.Inert(r.Content)), "meta": meta})
}
