package outbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/statefile"
)

// file is the outbox file of one identity and session: where it lives,
// the lock that orders every change to it, and the document as last read
// or written. Any number of processes may share it.
type file struct {
	path     string
	lockPath string
	// last is the file as last read or written: a file with the same bytes
	// decodes to the same document, so decoding it again is skipped.
	last *statefile.Cache[document]
}

// read decodes the current file without taking the lock. The document is
// the caller's to change.
func (f *file) read() (document, error) {
	data, exists, err := statefile.Read(f.path)
	if err != nil {
		return document{}, fmt.Errorf("outbox: %w", err)
	}
	if exists {
		if d, ok := f.last.Get(data); ok {
			return d, nil
		}
	}
	d, err := decode(data, exists)
	if err != nil {
		return document{}, fmt.Errorf("%w (%s)", err, f.path)
	}
	if exists {
		f.last.Put(data, d)
	}
	return d, nil
}

// update runs fn on the current document with the lock held and writes the
// result when fn reports a change. An error from fn is returned as is and
// nothing is written; a corrupt file is never overwritten.
func (f *file) update(ctx context.Context, fn func(d *document) (changed bool, err error)) error {
	return statefile.Locked(ctx, f.lockPath, func() error {
		d, err := f.read()
		if err != nil {
			return err
		}
		changed, err := fn(&d)
		if err != nil || !changed {
			return err
		}
		data := encode(&d)
		if err := statefile.WriteAtomic(f.path, data); err != nil {
			return fmt.Errorf("outbox: %w", err)
		}
		f.last.Put(data, d)
		return nil
	})
}

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

// fileEntry is one entry as read from the file. Unknown keys are ignored,
// so newer versions can add fields.
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
	Receipt    bool            `json:"receipt,omitempty"`
	Message    json.RawMessage `json:"message,omitempty"`
}

// encode returns the file for d. It writes the JSON by hand: the file is
// rewritten by every enqueue and every outcome, and a long outage can leave
// a thousand messages in it.
func encode(d *document) []byte {
	n := 32
	for _, s := range d.entries {
		n += len(s.raw) + len(s.Text) + 256
	}
	out := make([]byte, 0, n)
	out = append(out, `{"messages":[`...)
	for i, s := range d.entries {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, `{"msg_id":`...)
		out = identity.AppendString(out, s.MsgID)
		out = append(out, `,"route":`...)
		out = identity.AppendString(out, s.Route)
		out = append(out, `,"peer":`...)
		out = identity.AppendString(out, s.Peer)
		out = append(out, `,"text":`...)
		out = identity.AppendString(out, s.Text)
		out = append(out, `,"ts":`...)
		out = strconv.AppendUint(out, s.TS, 10)
		out = append(out, `,"queued_at":`...)
		out = strconv.AppendUint(out, s.QueuedAt, 10)
		out = append(out, `,"state":`...)
		out = identity.AppendString(out, string(s.State))
		out = append(out, `,"attempts":`...)
		out = strconv.AppendInt(out, int64(s.Attempts), 10)
		if s.LastError != "" {
			out = append(out, `,"last_error":`...)
			out = identity.AppendString(out, s.LastError)
		}
		if len(s.AcceptedBy) > 0 {
			out = append(out, `,"accepted_by":[`...)
			for j, u := range s.AcceptedBy {
				if j > 0 {
					out = append(out, ',')
				}
				out = identity.AppendString(out, u)
			}
			out = append(out, ']')
		}
		if s.FinishedAt != 0 {
			out = append(out, `,"finished_at":`...)
			out = strconv.AppendUint(out, s.FinishedAt, 10)
		}
		if s.Receipt {
			out = append(out, `,"receipt":true`...)
		}
		if len(s.raw) > 0 {
			out = append(out, `,"message":`...)
			out = append(out, s.raw...)
		}
		out = append(out, '}')
	}
	return append(out, "]}"...)
}

// clone returns a copy of d whose entries can be changed without changing
// d's. The message bytes are shared: they are never changed in place.
func (d *document) clone() document {
	c := document{entries: make([]*stored, len(d.entries))}
	for i, s := range d.entries {
		cp := *s
		c.entries[i] = &cp
	}
	return c
}

// decode parses the outbox file; a missing file (exists false) is an empty
// outbox. Every error wraps [ErrCorrupt].
func decode(data []byte, exists bool) (document, error) {
	if !exists {
		return document{}, nil
	}
	d, err := decodeDoc(data)
	if err != nil {
		return document{}, fmt.Errorf("%w: %w", ErrCorrupt, err)
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
			return document{}, fmt.Errorf("messages[%d]: %w", i, err)
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
		AcceptedBy: fe.AcceptedBy, FinishedAt: fe.FinishedAt, Receipt: fe.Receipt,
	}}
	if len(s.AcceptedBy) == 0 {
		s.AcceptedBy = nil // an empty list and none are the same
	}
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
