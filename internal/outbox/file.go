package outbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/interlink-go/interlink/internal/identity"
)

// document is the decoded outbox file: every entry in the order it was
// queued, pending and finished alike.
type document struct {
	entries []*stored
}

// stored is one entry of the file: the log entry and, while the message is
// pending, the signed message itself.
type stored struct {
	Entry
	// raw is the JSON of the signed message to send; set only while
	// pending. It may be a re-signed copy of the message first queued. It
	// is decoded only when it is sent, so that reading a file with many
	// pending messages stays cheap.
	raw json.RawMessage
}

// message decodes the pending message of s.
func (s *stored) message() (identity.Message, error) {
	m, err := identity.DecodeMessage(s.raw)
	if err != nil {
		return identity.Message{}, err
	}
	if m.MsgID != s.MsgID {
		return identity.Message{}, fmt.Errorf("message has msg_id %q, entry %q", m.MsgID, s.MsgID)
	}
	return m, nil
}

// fileEntry fixes the key order of the file and how empty values are
// written. Unknown keys are ignored when reading, so newer versions can add
// fields.
type fileEntry struct {
	MsgID      string          `json:"msg_id"`
	Route      string          `json:"route"`
	Peer       string          `json:"peer"`
	Text       string          `json:"text"`
	TS         uint64          `json:"ts"`
	QueuedAt   uint64          `json:"queued_at"`
	State      State           `json:"state"`
	Attempts   int             `json:"attempts"`
	LastError  string          `json:"last_error,omitempty"`
	AcceptedBy []string        `json:"accepted_by,omitempty"`
	FinishedAt uint64          `json:"finished_at,omitempty"`
	Message    json.RawMessage `json:"message,omitempty"`
}

type fileDoc struct {
	Messages []fileEntry `json:"messages"`
}

// encode returns the file for d.
func encode(d *document) ([]byte, error) {
	out := fileDoc{Messages: make([]fileEntry, 0, len(d.entries))}
	for _, s := range d.entries {
		fe := fileEntry{
			MsgID: s.MsgID, Route: s.Route, Peer: s.Peer, Text: s.Text, TS: s.TS,
			QueuedAt: s.QueuedAt, State: s.State, Attempts: s.Attempts, LastError: s.LastError,
			AcceptedBy: s.AcceptedBy, FinishedAt: s.FinishedAt,
		}
		fe.Message = s.raw
		out.Messages = append(out.Messages, fe)
	}
	return identity.Marshal(out)
}

// decode parses the outbox file; a missing file (exists false) is an empty
// outbox. Every error wraps [ErrCorrupt].
func decode(data []byte, exists bool) (document, error) {
	if !exists {
		return document{}, nil
	}
	d, err := decodeDoc(data)
	if err != nil {
		return document{}, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	return d, nil
}

func decodeDoc(data []byte) (document, error) {
	var f struct {
		Messages *[]fileEntry `json:"messages"`
	}
	if err := json.Unmarshal(data, &f); err != nil {
		return document{}, err
	}
	if f.Messages == nil {
		return document{}, errors.New("missing messages")
	}
	d := document{entries: make([]*stored, 0, len(*f.Messages))}
	seen := make(map[string]bool, len(*f.Messages))
	for i, fe := range *f.Messages {
		s, err := decodeEntry(&fe)
		if err != nil {
			return document{}, fmt.Errorf("messages[%d]: %v", i, err)
		}
		if seen[s.MsgID] {
			return document{}, fmt.Errorf("messages[%d]: msg_id %q appears twice", i, s.MsgID)
		}
		seen[s.MsgID] = true
		d.entries = append(d.entries, s)
	}
	return d, nil
}

func decodeEntry(fe *fileEntry) (*stored, error) {
	switch {
	case fe.MsgID == "":
		return nil, errors.New("missing msg_id")
	case fe.Route == "":
		return nil, errors.New("missing route")
	case !fe.State.valid():
		return nil, fmt.Errorf("unknown state %q", fe.State)
	case fe.Attempts < 0:
		return nil, errors.New("negative attempts")
	}
	s := &stored{Entry: Entry{
		MsgID: fe.MsgID, Route: fe.Route, Peer: fe.Peer, Text: fe.Text, TS: fe.TS,
		QueuedAt: fe.QueuedAt, State: fe.State, Attempts: fe.Attempts, LastError: fe.LastError,
		AcceptedBy: fe.AcceptedBy, FinishedAt: fe.FinishedAt,
	}}
	if fe.State != StatePending {
		return s, nil
	}
	if len(fe.Message) == 0 || string(fe.Message) == "null" {
		return nil, errors.New("pending without its message")
	}
	if fe.Message[0] != '{' {
		return nil, errors.New("message is not an object")
	}
	s.raw = fe.Message
	return s, nil
}

// cutText returns s cut to at most n bytes on a rune boundary, with an
// ellipsis when something was cut.
func cutText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n]
	for !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s + "…"
}
