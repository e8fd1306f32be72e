package tools

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/interlink-go/interlink/internal/budget"
	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/outbox"
	"github.com/interlink-go/interlink/internal/policy"
	"github.com/interlink-go/interlink/internal/progress"
	"github.com/interlink-go/interlink/internal/relay"
	"github.com/interlink-go/interlink/internal/render"
	"github.com/interlink-go/interlink/internal/route"
	"github.com/interlink-go/interlink/internal/untrusted"
	"github.com/interlink-go/interlink/internal/wire"
)

// MaxSendBody is the largest /send request body send_message accepts to
// build, so that relays, which take up to 2 MiB, never refuse it for size.
// A relay that says it takes less (interlink-bus on a NATS server with a
// smaller max_payload) lowers what goes through it; see [sizeCheck].
const MaxSendBody = 1 << 20

// statuses lists the task statuses, for error messages.
const statuses = "update, needs_input, result, failed, canceled"

// Sticky tells which session a peer last wrote from, where replies go.
type Sticky interface {
	Get(key identity.PublicKey) (session string, ok bool)
}

// Messaging is the tools that send messages: send_message and cancel_task.
// Every message they send passes [Messaging.queue], the place for anything
// that must see each outgoing message, such as a per-peer budget.
type Messaging struct {
	// Peers is peers.json, read afresh for every message.
	Peers *policy.Store
	// Relays are the buses whose rosters say where a peer is.
	Relays []*relay.Client
	// Signer signs every message.
	Signer *identity.Signer
	// Sticky is where replies to a peer go.
	Sticky Sticky
	// Now is the clock of the signed timestamps.
	Now func() time.Time
	// Log receives what the model does not need to see.
	Log *slog.Logger
	// Session gives what the tools use of the bound session.
	Session Scope[MessagingSession]
}

// MessagingSession is what the messaging tools use of the bound session.
type MessagingSession struct {
	// ID is the session id, and Route the session's own route, where
	// replies come back.
	ID    string
	Route route.Route
	// Outbox takes every message sent.
	Outbox *outbox.Outbox
	// Budget counts the sends to each peer.
	Budget *budget.Budget
	// Progress keeps the task markers the progress reminder reads.
	Progress *progress.Markers
}

// Parameter descriptions shared by several tools.
const (
	descTo        = "Petname of the peer as listed in peers.json, or 'self' for another session of your own identity."
	descSession   = "Session id from discover; a unique prefix is enough. Leave out to use the peer's only live session or the one that wrote last."
	descTaskID    = "Task id chosen by whoever asked for the work; repeat it in every message about that task."
	descStatus    = "Task status: update (progress), needs_input (blocked on the requester), result (done), failed, or canceled."
	descInReplyTo = "msg_id of the message this one answers."
	descLimit     = "Most records to return, 1 to 100 (default 20)."
)

// Tools returns send_message and cancel_task.
func (m *Messaging) Tools() []Tool {
	return []Tool{
		Bound(mcp.NewTool("send_message",
			mcp.WithDescription("Send a signed message to a peer by petname. to='self' reaches another live session of your own identity without pairing. "+
				"session picks one of the peer's sessions (unique prefix accepted). The message is queued and delivered in the background; "+
				"follow it with message_status."),
			mcp.WithString("to", mcp.Required(), mcp.Description(descTo)),
			mcp.WithString("text", mcp.Required(), mcp.Description("The message.")),
			mcp.WithString("session", mcp.Description(descSession)),
			mcp.WithString("task_id", mcp.Description(descTaskID)),
			mcp.WithString("status", mcp.Description(descStatus)),
			mcp.WithString("in_reply_to", mcp.Description(descInReplyTo)),
		), m.Session, m.sendMessage),
		Bound(mcp.NewTool("cancel_task",
			mcp.WithDescription("Ask a peer to stop a task: sends a message with status canceled for that task_id."),
			mcp.WithString("to", mcp.Required(), mcp.Description("Petname of the peer working on the task.")),
			mcp.WithString("task_id", mcp.Required(), mcp.Description("The task to cancel.")),
			mcp.WithString("reason", mcp.Description("Why; sent as the message text.")),
		), m.Session, m.cancelTask),
	}
}

type sendArgs struct {
	To        string `json:"to"`
	Text      string `json:"text"`
	Session   string `json:"session"`
	TaskID    string `json:"task_id"`
	Status    string `json:"status"`
	InReplyTo string `json:"in_reply_to"`
}

func (m *Messaging) sendMessage(ctx context.Context, s *MessagingSession, a sendArgs) (string, error) {
	st := identity.Status(trim(a.Status))
	if st != "" && !st.Valid() {
		return "", invalidf("unknown status %q; use one of %s", a.Status, statuses)
	}
	key, label, err := m.resolve(a.To, true)
	if err != nil {
		return "", err
	}
	t, err := m.pickTarget(ctx, s, key, label, trim(a.Session))
	if err != nil {
		return "", err
	}
	msg := identity.Message{Text: a.Text, TaskID: a.TaskID, Status: st, InReplyTo: a.InReplyTo}
	msgID, sizeNote, err := m.queue(ctx, s, t, a.To, a.Text, &msg)
	if err != nil {
		return "", err
	}
	if st == identity.Status("update") || st.Terminal() {
		if err := s.Progress.Outbound(a.TaskID, st); err != nil {
			m.Log.Debug("progress marker", "err", err)
		}
	}
	var b strings.Builder
	// The session may come from the roster: another party's text.
	fmt.Fprintf(&b, "queued for %s (%s) (msg_id %s)", a.To, render.Inert(untrusted.Label(t.session)), msgID)
	switch {
	case a.TaskID != "" && st != "":
		fmt.Fprintf(&b, " [task %s · %s]", a.TaskID, st)
	case a.TaskID != "":
		fmt.Fprintf(&b, " [task %s]", a.TaskID)
	}
	b.WriteString(" — ")
	b.WriteString(t.where.note())
	b.WriteString(sizeNote)
	return b.String(), nil
}

type cancelArgs struct {
	To     string `json:"to"`
	TaskID string `json:"task_id"`
	Reason string `json:"reason"`
}

func (m *Messaging) cancelTask(ctx context.Context, s *MessagingSession, a cancelArgs) (string, error) {
	if trim(a.TaskID) == "" {
		return "", invalidf("task_id must not be empty")
	}
	key, label, err := m.resolve(a.To, false)
	if err != nil {
		return "", err
	}
	t, err := m.pickTarget(ctx, s, key, label, "")
	if err != nil {
		return "", err
	}
	text := a.Reason
	if trim(text) == "" {
		text = "canceled"
	}
	msg := identity.Message{Text: text, TaskID: a.TaskID, Status: identity.Status("canceled")}
	msgID, sizeNote, err := m.queue(ctx, s, t, a.To, "[cancel "+a.TaskID+"] "+text, &msg)
	if err != nil {
		return "", err
	}
	if err := s.Progress.Canceled(a.TaskID); err != nil {
		m.Log.Debug("progress marker", "err", err)
	}
	return fmt.Sprintf("cancellation of task %s sent to %s (%s) (msg_id %s) — %s%s",
		a.TaskID, a.To, render.Inert(untrusted.Label(t.session)), msgID, t.where.note(), sizeNote), nil
}

// resolve finds the recipient key of to in a fresh read of peers.json. With
// allowSelf, "self" (any case, trimmed) is the own key.
func (m *Messaging) resolve(to string, allowSelf bool) (identity.PublicKey, string, error) {
	p, err := m.Peers.Load()
	if err != nil {
		return identity.PublicKey{}, "", localState(err)
	}
	if !allowSelf {
		if key, ok := p.Key(to); ok {
			return key, to, nil
		}
		return identity.PublicKey{}, "", invalidf("unknown peer %q: no such petname in peers.json", to)
	}
	key, label, err := p.ResolveSendTarget(to, m.Signer.Public())
	if upe, ok := errors.AsType[*policy.UnknownPeerError](err); ok {
		return identity.PublicKey{}, "", invalidf("%v", upe)
	}
	if err != nil {
		return identity.PublicKey{}, "", invalidf("%v", err)
	}
	return key, label, nil
}

// queue signs msg from this session to t and writes it to the outbox,
// logged under the label peer with logText. It is the one way out of
// this session for a message. The message is on disk when queue returns;
// a full outbox is an error the caller can act on. sizeNote, when not
// empty, is a sentence for the tool's answer naming relays that will
// refuse the message for its size (see [sizeCheck]).
func (m *Messaging) queue(ctx context.Context, s *MessagingSession, t target, peer, logText string, msg *identity.Message) (msgID, sizeNote string, err error) {
	msgID, err = identity.NewMsgID(nil)
	if err != nil {
		return "", "", fmt.Errorf("new msg_id: %w", err)
	}
	msg.From = m.Signer.Public().String()
	msg.To = t.key.String()
	msg.TS = identity.Millis(m.Now())
	msg.MsgID = msgID
	msg.Kind = identity.KindMessage
	msg.ReplyTo = s.Route.String()
	if err := m.Signer.SignMessage(msg); err != nil {
		return "", "", fmt.Errorf("sign: %w", err)
	}
	rt := route.New(t.key.String(), t.session).String()
	n, err := sendBodySize(rt, msg)
	if err != nil {
		return "", "", fmt.Errorf("encode: %w", err)
	}
	if sizeNote, err = sizeCheck(n, m.Relays); err != nil {
		return "", "", err
	}
	if err := s.Budget.Send(ctx, budget.Peer{Key: t.key, Name: peer}, msg.TaskID, msg.Status); err != nil {
		if le, ok := errors.AsType[*budget.SendLimitError](err); ok {
			return "", "", invalidf("not sent: this would be the %s message to %s within %s without a prompt from your operator, "+
				"more than the send budget allows (%s). Stop the exchange here and ask your operator how to go on; "+
				"their next prompt lifts the limit", ordinal(le.Limit.N+1), untrusted.Quote(peer), le.Limit.Window(), le.Limit)
		}
		return "", "", localState(err)
	}
	if err := s.Outbox.EnqueueLogged(ctx, rt, peer, logText, *msg); err != nil {
		if errors.Is(err, outbox.ErrFull) {
			return "", "", invalidf("not sent: %v", err)
		}
		return "", "", localState(err)
	}
	return msgID, sizeNote, nil
}

// ordinal writes n as 31st, 32nd, 33rd, 34th.
func ordinal(n int) string {
	suffix := "th"
	switch {
	case n%100 >= 11 && n%100 <= 13:
	case n%10 == 1:
		suffix = "st"
	case n%10 == 2:
		suffix = "nd"
	case n%10 == 3:
		suffix = "rd"
	}
	return fmt.Sprintf("%d%s", n, suffix)
}

// sizeCheck decides what a /send body of n bytes meets at the relays:
// an error for the model when n is over [MaxSendBody], or over the limit
// of every relay (each says its limit in its answers, [relay.Client.MaxBody];
// one that never said takes 2 MiB), so that the message is not queued only
// to be refused; otherwise, when some relays take less than n, a note
// naming them, since the message goes through the others. A relay's limit
// only ever makes the agent expect a refusal from that relay, so a relay
// that lies about it harms no message sent through another.
func sizeCheck(n int, relays []*relay.Client) (note string, err error) {
	if n > MaxSendBody {
		return "", invalidf("message too large: the request would be %d bytes, more than %d; split the text", n, MaxSendBody)
	}
	var small []string
	var largest int64
	takes := len(relays) == 0
	for _, r := range relays {
		limit, ok := r.MaxBody()
		if !ok || int64(n) <= limit {
			takes = true
			continue
		}
		small = append(small, fmt.Sprintf("%s takes at most %d bytes", r.URL(), limit))
		largest = max(largest, limit)
	}
	switch {
	case len(small) == 0:
		return "", nil
	case !takes:
		return "", invalidf("message too large for the relays: the request would be %d bytes, and %s; split the text into parts that stay under %d bytes",
			n, strings.Join(small, ", "), largest)
	}
	return fmt.Sprintf(". At %d bytes the message is too large for some relays, which will refuse it (%s); the others carry it",
		n, strings.Join(small, ", ")), nil
}

// sendBodySize returns the size of the /send request that carries msg to
// rt.
func sendBodySize(rt string, msg *identity.Message) (int, error) {
	payload, err := msg.MarshalJSON()
	if err != nil {
		return 0, err
	}
	return wire.SendBodyLen(rt, len(payload)), nil
}
