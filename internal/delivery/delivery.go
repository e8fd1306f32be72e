// Package delivery holds the ways a notice reaches the host model.
//
// A [Sink] takes two kinds of text. Inbox notices (from the mailbox) say
// that unread messages are waiting and carry no peer text; the host answers
// them by calling receive_messages. Full-text records carry a pairing
// notice, which does not go through the mailbox. Which sink a server uses
// depends on the host: the Claude notice inbox read by the Stop-hook
// listener, Claude channel notifications, or codex queue.
//
// [Memory] is a sink that keeps what it is given, for tests and the demo.
package delivery

import (
	"context"
	"sync"

	"github.com/interlink-go/interlink/internal/mailbox"
	"github.com/interlink-go/interlink/internal/protocol"
)

// Record is one host-facing record, in the JSON shape of the Claude notice
// inbox: all strings, the optional ones left out when empty.
type Record struct {
	Sender    string `json:"sender"`
	MsgID     string `json:"msg_id"`
	Content   string `json:"content"`
	TaskID    string `json:"task_id,omitempty"`
	Status    string `json:"status,omitempty"`
	InReplyTo string `json:"in_reply_to,omitempty"`
}

// Sink hands text to the host.
type Sink interface {
	// Notice hands the inbox notice with the given id and text to the host
	// and returns the state the covered records move to (inbox_queued,
	// notification_sent or host_queued). An error means the handoff failed;
	// the caller records delivery_failed and the notice expires as usual.
	Notice(ctx context.Context, id, text string) (mailbox.State, error)
	// Text hands a full-text record (a pairing notice) to the host.
	Text(ctx context.Context, r Record) error
}

// NoticeRecord returns the record a notice becomes in a full-text sink.
func NoticeRecord(id, text string) Record {
	return Record{Sender: protocol.SystemSender, MsgID: id, Content: text}
}

// Memory is a [Sink] that keeps every record in memory. The zero value
// accepts everything and reports notices as inbox_queued.
type Memory struct {
	mu      sync.Mutex
	records []Record
	fail    error
}

// SetFail makes later calls fail with err; nil makes them succeed again.
func (m *Memory) SetFail(err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.fail = err
}

// Notice records the notice as a record from [protocol.SystemSender].
func (m *Memory) Notice(_ context.Context, id, text string) (mailbox.State, error) {
	if err := m.add(NoticeRecord(id, text)); err != nil {
		return "", err
	}
	return mailbox.StateInboxQueued, nil
}

// Text records r.
func (m *Memory) Text(_ context.Context, r Record) error { return m.add(r) }

func (m *Memory) add(r Record) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail != nil {
		return m.fail
	}
	m.records = append(m.records, r)
	return nil
}

// Records returns a copy of what the sink has been given, oldest first.
func (m *Memory) Records() []Record {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]Record(nil), m.records...)
}
