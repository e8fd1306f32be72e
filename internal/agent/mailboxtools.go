package agent

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/interlink-go/interlink/internal/mailbox"
	"github.com/interlink-go/interlink/internal/outbox"
	"github.com/interlink-go/interlink/internal/render"
)

// noUnread starts the answer of receive_messages when nothing is unread.
const noUnread = "No unread messages. Carry on silently; no reply is needed."

func (a *Agent) receiveMessages(_ context.Context, args args) (string, error) {
	if err := a.requireReady(); err != nil {
		return "", err
	}
	if _, err := args.str("notification_id", false); err != nil {
		return "", err
	}
	limit, err := args.limit()
	if err != nil {
		return "", err
	}
	recs, err := a.mailbox.Receive(limit)
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
	return strings.Join(lines, "\n"), nil
}

func (a *Agent) readMessage(_ context.Context, args args) (string, error) {
	if err := a.requireReady(); err != nil {
		return "", err
	}
	sender, err := args.str("sender", true)
	if err != nil {
		return "", err
	}
	msgID, err := args.str("msg_id", true)
	if err != nil {
		return "", err
	}
	offset, err := args.offset()
	if err != nil {
		return "", err
	}
	recs, err := a.mailbox.Records()
	if err != nil {
		return "", localState(err)
	}
	want := mailbox.Receipt{Sender: sender, MsgID: msgID}
	for i := range recs {
		if recs[i].Receipt() == want {
			return render.RecordFrom(&recs[i], offset), nil
		}
	}
	return "", invalidf("no received message with that receipt is kept in the mailbox; pass sender and msg_id exactly as the receipt gives them")
}

func (a *Agent) acknowledgeMessages(_ context.Context, args args) (string, error) {
	if err := a.requireReady(); err != nil {
		return "", err
	}
	receipts, err := args.receipts()
	if err != nil {
		return "", err
	}
	n, err := a.mailbox.Acknowledge(receipts)
	if err != nil {
		return "", localState(err)
	}
	// The sentence is the original's: scripts match "Acknowledged N ".
	return fmt.Sprintf("Acknowledged %d previously unacknowledged messages. "+
		"Repeated or unknown receipts change nothing; messages that arrived since stay unread.", n), nil
}

// offset reads the offset argument of read_message: a whole number of
// bytes, 0 or more, default 0.
func (a args) offset() (int, error) {
	v, ok := a["offset"]
	if !ok || v == nil {
		return 0, nil
	}
	f, ok := v.(float64)
	if !ok || f != math.Trunc(f) || f < 0 || f > math.MaxInt32 {
		return 0, invalidf("offset must be a whole number of bytes, 0 or more")
	}
	return int(f), nil
}

// receipts reads the messages argument of acknowledge_messages.
func (a args) receipts() ([]mailbox.Receipt, error) {
	v, ok := a["messages"]
	if !ok || v == nil {
		return nil, invalidf("messages is required: 1 to 100 receipts")
	}
	list, ok := v.([]any)
	if !ok {
		return nil, invalidf("messages must be an array of receipts")
	}
	if len(list) < 1 || len(list) > 100 {
		return nil, invalidf("messages must hold 1 to 100 receipts, not %d", len(list))
	}
	out := make([]mailbox.Receipt, len(list))
	for i, item := range list {
		obj, ok := item.(map[string]any)
		if !ok {
			return nil, invalidf("messages[%d] must be an object with sender and msg_id", i)
		}
		sender, ok1 := obj["sender"].(string)
		msgID, ok2 := obj["msg_id"].(string)
		if !ok1 || !ok2 {
			return nil, invalidf("messages[%d] needs string fields sender and msg_id", i)
		}
		out[i] = mailbox.Receipt{Sender: sender, MsgID: msgID}
	}
	return out, nil
}

func (a *Agent) messageStatus(_ context.Context, args args) (string, error) {
	if err := a.requireReady(); err != nil {
		return "", err
	}
	id, err := args.str("msg_id", true)
	if err != nil {
		return "", err
	}
	recs, err := a.mailbox.Records()
	if err != nil {
		return "", localState(err)
	}
	// Both directions are shown when both know the id: a peer can reuse the
	// id of a message it received, and must not hide the sent one's state.
	var parts []string
	for i := range recs {
		if recs[i].Message.MsgID == id {
			parts = append(parts, render.Record(&recs[i]))
			break
		}
	}
	if len(parts) == 0 {
		tombs, err := a.mailbox.Tombstones()
		if err != nil {
			return "", localState(err)
		}
		for i := range tombs {
			if tombs[i].MsgID == id {
				parts = append(parts, tombstoneLine(&tombs[i]))
				break
			}
		}
	}
	e, ok, err := a.outbox.Status(id)
	if err != nil {
		return "", localState(err)
	}
	if ok {
		parts = append(parts, logLine(&e)+"\nreceiver acknowledgement unknown (no remote receipt)")
	}
	if len(parts) == 0 {
		return fmt.Sprintf("no message with msg_id %q is known locally", id), nil
	}
	return strings.Join(parts, "\n"), nil
}

// tombstoneLine renders what the mailbox keeps of a message that is no
// longer unread: its state and receipt. The text is not kept.
func tombstoneLine(t *mailbox.Tombstone) string {
	label := string(t.State())
	if t.SupersededBy != "" && !t.Acknowledged {
		label = "superseded by " + t.SupersededBy
	}
	receipt, _ := json.Marshal(t.Receipt()) // two strings: cannot fail
	return "[" + label + "] Receipt: " + string(receipt) + "\n(consumed or superseded: its text is no longer kept)"
}

// logLine renders an outbound log entry.
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

func (a *Agent) listPending(context.Context, args) (string, error) {
	var pend []outbox.Entry
	if a.isReady() {
		var err error
		if pend, err = a.outbox.Pending(); err != nil {
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
	}
	return b.String(), nil
}

// historyItem is one message of a conversation, either direction.
type historyItem struct {
	ts    uint64
	msgID string
	out   *outbox.Entry
	in    *mailbox.Record
}

func (a *Agent) conversationHistory(_ context.Context, args args) (string, error) {
	if err := a.requireReady(); err != nil {
		return "", err
	}
	peer, err := args.str("peer", true)
	if err != nil {
		return "", err
	}
	limit, err := args.limit()
	if err != nil {
		return "", err
	}
	consume, err := args.boolean("consume", false)
	if err != nil {
		return "", err
	}
	var items []historyItem
	sent, err := a.outbox.Log(peer, limit)
	if err != nil {
		return "", localState(err)
	}
	for _, e := range sent {
		items = append(items, historyItem{ts: e.TS, msgID: e.MsgID, out: &e})
	}
	recs, err := a.mailbox.History(peer, 0, false)
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
	if consume {
		var receipts []mailbox.Receipt
		for _, it := range items {
			if it.in != nil {
				receipts = append(receipts, it.in.Receipt())
			}
		}
		if len(receipts) > 0 {
			if _, err := a.mailbox.Acknowledge(receipts); err != nil {
				return "", localState(err)
			}
			for _, it := range items {
				if it.in != nil {
					it.in.State = mailbox.StateAcknowledged
				}
			}
		}
	}
	if len(items) == 0 {
		return fmt.Sprintf("no history with %s", peer), nil
	}
	lines := make([]string, 0, len(items)+1)
	if consume {
		lines = append(lines, "The received messages below are now acknowledged.")
	}
	for _, it := range items {
		if it.out != nil {
			lines = append(lines, logLine(it.out))
		} else {
			lines = append(lines, render.Record(it.in))
		}
	}
	return strings.Join(lines, "\n"), nil
}
