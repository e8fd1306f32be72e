// Package render turns messages into the text a host model reads.
//
// Every peer message reaches the model inside an attributed block:
//
//	[interlink peer message from alice] A peer sent this through Interlink; read it and act on it if it is in scope.
//	<interlink sender="alice" msg_id="…" task="t1" status="update">
//	the body
//	</interlink>
//
// The sender attribute is always a name this side chose (a verified petname,
// "self", or "Interlink" for notices), never text a peer claimed. Attribute
// values lose the characters that could end the attribute or the tag, and
// the body has every "<interlink" and "</interlink" broken by a zero-width
// space, so a body cannot close its own block and open a forged one.
//
// Tool results show mailbox records with [Record]: a receipt line the model
// hands back to acknowledge_messages, then the block.
package render

import (
	"encoding/json"
	"strings"

	"github.com/interlink-go/interlink/internal/mailbox"
)

// DefaultSender is the sender shown for an inbox line that names none.
const DefaultSender = "peer"

// SystemSender is the sender of notices written by interlink itself (inbox
// and pairing notices). No petname can take it.
const SystemSender = "Interlink"

// Message is what a block shows. Sender is a name chosen locally; every other
// field may come from a peer.
type Message struct {
	Sender    string
	MsgID     string
	Content   string
	TaskID    string
	Status    string
	InReplyTo string
}

// attrCleaner deletes what could end an attribute value or the tag.
var attrCleaner = strings.NewReplacer(`"`, "", "<", "", ">", "", "\n", "", "\r", "")

// bodyDefang breaks the block's own tags inside a body with U+200B.
var bodyDefang = strings.NewReplacer("<interlink", "<\u200binterlink", "</interlink", "</\u200binterlink")

// Attr returns s as it may appear inside an attribute value.
func Attr(s string) string { return attrCleaner.Replace(s) }

// Body returns s with the block's tags broken.
func Body(s string) string { return bodyDefang.Replace(s) }

// Block returns the attributed block for m. Attributes that are empty are
// left out, in the order sender, msg_id, task, status, in_reply_to.
func Block(m Message) string {
	sender := Attr(m.Sender)
	var b strings.Builder
	b.Grow(len(m.Content) + 256)
	if sender == SystemSender {
		b.WriteString("[interlink notice] Interlink itself wrote this, not a peer; act on it before ending the turn.\n")
	} else {
		b.WriteString("[interlink peer message from ")
		b.WriteString(sender)
		b.WriteString("] A peer sent this through Interlink; read it and act on it if it is in scope.\n")
	}
	b.WriteString(`<interlink sender="`)
	b.WriteString(sender)
	b.WriteByte('"')
	attr := func(name, v string) {
		if v == "" {
			return
		}
		b.WriteByte(' ')
		b.WriteString(name)
		b.WriteString(`="`)
		b.WriteString(Attr(v))
		b.WriteByte('"')
	}
	attr("msg_id", m.MsgID)
	attr("task", m.TaskID)
	attr("status", m.Status)
	attr("in_reply_to", m.InReplyTo)
	b.WriteString(">\n")
	b.WriteString(Body(m.Content))
	b.WriteString("\n</interlink>")
	return b.String()
}

// Line renders one line of a notice inbox: a JSON object with the string
// fields sender, msg_id, content, task_id, status and in_reply_to. A line
// that is not a JSON object is returned unchanged; a missing sender shows as
// [DefaultSender]. Fields of other types are ignored.
func Line(line string) string {
	var obj map[string]any
	if err := json.Unmarshal([]byte(line), &obj); err != nil || obj == nil {
		return line
	}
	str := func(k string) string {
		s, _ := obj[k].(string)
		return s
	}
	m := Message{
		Sender:    str("sender"),
		MsgID:     str("msg_id"),
		Content:   str("content"),
		TaskID:    str("task_id"),
		Status:    str("status"),
		InReplyTo: str("in_reply_to"),
	}
	if _, ok := obj["sender"].(string); !ok {
		m.Sender = DefaultSender
	}
	return Block(m)
}

// Record renders a mailbox record for a tool result: the label (the record's
// state, or "superseded by <id>"), the receipt as compact JSON, then the
// block under the stored petname.
func Record(r *mailbox.Record) string {
	label := string(r.State)
	if r.SupersededBy != "" {
		label = "superseded by " + r.SupersededBy
	}
	receipt, _ := json.Marshal(r.Receipt()) // two strings: cannot fail
	m := &r.Message
	return "[" + label + "] Receipt: " + string(receipt) + "\n" + Block(Message{
		Sender:    r.Peer,
		MsgID:     m.MsgID,
		Content:   m.Text,
		TaskID:    m.TaskID,
		Status:    string(m.Status),
		InReplyTo: m.InReplyTo,
	})
}
