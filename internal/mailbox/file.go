package mailbox

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	"github.com/interlink-go/interlink/internal/identity"
)

// State is the delivery state of a record, or of a notice. The strings are
// part of the file format and of tool output.
type State string

// Record states, in the order a record normally moves through them: stored
// on arrival, then one of the four handoff states once a notice covering it
// was handed to the host (or failed), then acknowledged. StatePreparing is
// only ever the state of a notice that has been reserved but not yet handed
// off.
const (
	StateStored           State = "receiver_stored"
	StateInboxQueued      State = "inbox_queued"
	StateNotificationSent State = "notification_sent"
	StateHostQueued       State = "host_queued"
	StateDeliveryFailed   State = "delivery_failed"
	StateAcknowledged     State = "receiver_acknowledged"
	StatePreparing        State = "preparing"
)

// handoff reports whether s is one of the states [Mailbox.Finish] accepts.
func (s State) handoff() bool {
	switch s {
	case StateInboxQueued, StateNotificationSent, StateHostQueued, StateDeliveryFailed:
		return true
	}
	return false
}

// recordState reports whether s may be the state of a record.
func (s State) recordState() bool {
	return s == StateStored || s == StateAcknowledged || s.handoff()
}

// noticeState reports whether s may be the state of a notice.
func (s State) noticeState() bool {
	return s == StatePreparing || s.handoff()
}

// Record is one inbound message held by the mailbox.
type Record struct {
	// Message is the verified message as it arrived.
	Message identity.Message
	// Peer is the local petname of the sender when the message arrived
	// ("self" for a sibling session of this identity). It is a label only;
	// the sender is Message.From.
	Peer string
	// State is the delivery state of the record.
	State State
	// SupersededBy is the msg_id of the progress message that replaced this
	// one, or empty when it is not superseded.
	SupersededBy string

	// raw is the JSON of Message as stored, when known. A message never
	// changes once retained, so the file is written with these bytes
	// instead of encoding every message again.
	raw []byte
	// covered is set, with SupersededBy, when the successor was signed
	// late enough that the record needs no tombstone (see
	// [Mailbox.Retain]). It is never stored.
	covered bool
}

// Unread reports whether r still waits to be consumed: it is neither
// acknowledged nor superseded.
func (r *Record) Unread() bool {
	return r.State != StateAcknowledged && r.SupersededBy == ""
}

// Receipt returns the receipt that acknowledges r.
func (r *Record) Receipt() Receipt {
	return Receipt{Sender: r.Message.From, MsgID: r.Message.MsgID}
}

// attention reports whether r belongs to the attention set: unread and not
// a progress update.
func (r *Record) attention() bool {
	return r.Unread() && r.Message.Status != identity.StatusUpdate
}

// Receipt names one inbound message exactly: the signer's public key and the
// message id. The same msg_id from two senders names two messages.
type Receipt struct {
	Sender string `json:"sender"`
	MsgID  string `json:"msg_id"`
}

// Notice is a reservation to wake the host about unread messages.
type Notice struct {
	// ID is the notification id the host passes back to receive_messages.
	ID string
	// State is StatePreparing until the handoff is finished.
	State State
	// Messages are the records the notice covers, in file order.
	Messages []Receipt
	// RetryAt is when the notice expires, in Unix milliseconds.
	RetryAt uint64
	// Attempt counts the notices issued in a row for a backlog, capped at
	// maxAttempt; it sets the back-off of the next one.
	Attempt int
	// Fresh are the covered messages no earlier notice reached the host
	// with: what this notice is the first to announce. It is set by
	// [Mailbox.Reserve] only, and not kept in the file.
	Fresh []Receipt
}

// Tombstone is what the mailbox keeps of a message that is no longer
// unread: enough to recognise a redelivered copy (sender and msg_id), to
// know when the copy could no longer pass the trust gate (the signed
// time), and, for progress, enough to keep coalescing late updates. The
// text is in the history, if anywhere (see [Mailbox.History]).
type Tombstone struct {
	Sender string
	MsgID  string
	// TS is the signed time of the message, Unix milliseconds.
	TS uint64
	// Acknowledged is set once the message was consumed.
	Acknowledged bool
	// SupersededBy is the msg_id of the progress message that replaced
	// this one, or empty.
	SupersededBy string
	// TaskID, Status and ReplyTo are kept for task updates and final
	// statuses only, the messages progress coalescing compares.
	TaskID  string
	Status  identity.Status
	ReplyTo string
}

// Receipt returns the receipt that names the message of t.
func (t *Tombstone) Receipt() Receipt { return Receipt{Sender: t.Sender, MsgID: t.MsgID} }

// State returns the state message_status shows for t.
func (t *Tombstone) State() State {
	if t.Acknowledged {
		return StateAcknowledged
	}
	return StateStored
}

// tombstoneOf returns the tombstone of r.
func tombstoneOf(r *Record) Tombstone {
	m := &r.Message
	t := Tombstone{Sender: m.From, MsgID: m.MsgID, TS: m.TS, Acknowledged: r.State == StateAcknowledged,
		SupersededBy: r.SupersededBy}
	if m.TaskID != "" && (m.Status == identity.StatusUpdate || m.Status.Terminal()) {
		t.TaskID, t.Status, t.ReplyTo = m.TaskID, m.Status, m.ReplyTo
	}
	return t
}

// document is the decoded mailbox file, and, while the file lock is held,
// the tombstones beside it.
type document struct {
	records []Record // unread records, in arrival order
	notice  *Notice
	// legacy holds what a file of the earlier shape kept as consumed or
	// superseded records; the next write moves them to the tombstone log
	// and their text to the history.
	legacy []Record

	// tombs is the tombstone log; set only under the file lock, and only
	// read through it. added collects the tombstones a change adds or
	// updates, appended to the log before the file is written.
	tombs *tombLog
	added []Tombstone
	// retired collects the records a change takes out of the unread ones
	// (or admits already superseded), for the history, which keeps their
	// text; see [histLog].
	retired []Record

	// admitted is the sender whose new message the change admits, as a
	// record (then admittedRecord is set) or as a tombstone; empty when
	// it admits none. Its share is checked before anything is written.
	admitted       string
	admittedRecord bool
}

// clone returns a copy of the file part of d that can be changed without
// changing d.
func (d *document) clone() document {
	c := document{records: slices.Clone(d.records), legacy: slices.Clone(d.legacy)}
	if d.notice != nil {
		n := *d.notice
		n.Messages = slices.Clone(n.Messages)
		c.notice = &n
	}
	return c
}

// fileNotice fixes the key order of the notice and how empty
// values are written.
type fileNotice struct {
	ID       string      `json:"id"`
	State    State       `json:"state"`
	Messages [][2]string `json:"messages"`
	RetryAt  uint64      `json:"retry_at"`
	Attempt  int         `json:"attempt"`
}

// encodeRecords returns the JSON array of records as the file stores it,
// and the size in bytes of each record in it (without the comma between
// two).
//
// It writes the JSON by hand, with each message's stored bytes where they
// are known: a full mailbox is rewritten by every acknowledgement.
func encodeRecords(recs []Record) ([]byte, []int, error) {
	n := 2
	for i := range recs {
		n += len(recs[i].raw) + len(recs[i].Message.Text) + 128
	}
	out := make([]byte, 0, n)
	sizes := make([]int, len(recs))
	out = append(out, '[')
	for i := range recs {
		r := &recs[i]
		if i > 0 {
			out = append(out, ',')
		}
		start := len(out)
		raw := r.raw
		if len(raw) == 0 {
			var err error
			if raw, err = r.Message.MarshalJSON(); err != nil {
				return nil, nil, err
			}
		}
		out = append(out, `{"message":`...)
		out = append(out, raw...)
		out = append(out, `,"peer":`...)
		out = identity.AppendString(out, r.Peer)
		out = append(out, `,"state":`...)
		out = identity.AppendString(out, string(r.State))
		out = append(out, `,"superseded_by":`...)
		if r.SupersededBy == "" {
			out = append(out, "null"...)
		} else {
			out = identity.AppendString(out, r.SupersededBy)
		}
		out = append(out, '}')
		sizes[i] = len(out) - start
	}
	return append(out, ']'), sizes, nil
}

// encode returns the whole file for records already encoded by
// encodeRecords and the notice n (nil for none).
func encode(records []byte, n *Notice) ([]byte, error) {
	var fn *fileNotice
	if n != nil {
		fn = &fileNotice{ID: n.ID, State: n.State, Messages: make([][2]string, len(n.Messages)),
			RetryAt: n.RetryAt, Attempt: n.Attempt}
		for i, m := range n.Messages {
			fn.Messages[i] = [2]string{m.Sender, m.MsgID}
		}
	}
	notice, err := identity.Marshal(fn)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(records)+len(notice)+32)
	out = append(out, `{"records":`...)
	out = append(out, records...)
	out = append(out, `,"notice":`...)
	out = append(out, notice...)
	out = append(out, '}')
	return out, nil
}

// appendTombstone appends t as one line of the tombstone log. It is
// written by hand because a compaction writes a day's worth of them.
func appendTombstone(out []byte, t *Tombstone) []byte {
	out = append(out, `{"sender":`...)
	out = identity.AppendString(out, t.Sender)
	out = append(out, `,"msg_id":`...)
	out = identity.AppendString(out, t.MsgID)
	out = append(out, `,"ts":`...)
	out = strconv.AppendUint(out, t.TS, 10)
	if t.Acknowledged {
		out = append(out, `,"acknowledged":true`...)
	}
	if t.SupersededBy != "" {
		out = append(out, `,"superseded_by":`...)
		out = identity.AppendString(out, t.SupersededBy)
	}
	if t.TaskID != "" {
		out = append(out, `,"task_id":`...)
		out = identity.AppendString(out, t.TaskID)
		out = append(out, `,"status":`...)
		out = identity.AppendString(out, string(t.Status))
		out = append(out, `,"reply_to":`...)
		out = identity.AppendString(out, t.ReplyTo)
	}
	out = append(out, '}')
	return append(out, '\n')
}

// object is a decoded JSON object whose values are checked one by one, so
// that nulls and wrong types are errors rather than silent zero values.
// Unknown keys are ignored.
type object map[string]json.RawMessage

func isNull(raw json.RawMessage) bool { return bytes.Equal(raw, []byte("null")) }

func decodeObject(raw []byte) (object, error) {
	var o object
	if err := json.Unmarshal(raw, &o); err != nil {
		return nil, err
	}
	if o == nil {
		return nil, fmt.Errorf("not an object")
	}
	return o, nil
}

// str returns the string under key. Missing or null is "" when optional
// and an error when required.
func (o object) str(key string, required bool) (string, error) {
	raw, ok := o[key]
	if !ok || isNull(raw) {
		if required {
			return "", fmt.Errorf("missing %s", key)
		}
		return "", nil
	}
	if raw[0] != '"' {
		return "", fmt.Errorf("%s is not a string", key)
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", fmt.Errorf("%s: %w", key, err)
	}
	return s, nil
}

// uint returns the unsigned integer under key, 0 when missing or null.
func (o object) uint(key string, bits int) (uint64, error) {
	raw, ok := o[key]
	if !ok || isNull(raw) {
		return 0, nil
	}
	n, err := strconv.ParseUint(string(raw), 10, bits)
	if err != nil {
		return 0, fmt.Errorf("%s is not an unsigned integer", key)
	}
	return n, nil
}

// array returns the elements of the JSON array under key, which must be
// present and not null.
func (o object) array(key string) ([]json.RawMessage, error) {
	raw, ok := o[key]
	if !ok || isNull(raw) {
		return nil, fmt.Errorf("missing %s", key)
	}
	var elems []json.RawMessage
	if err := json.Unmarshal(raw, &elems); err != nil {
		return nil, fmt.Errorf("%s is not a list", key)
	}
	return elems, nil
}

// decode parses the mailbox file. A missing file (exists false) is the empty
// mailbox. Every error wraps [ErrCorrupt].
func decode(data []byte, exists bool) (document, error) {
	if !exists {
		return document{}, nil
	}
	d, err := decodeDocument(data)
	if err != nil {
		return document{}, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	return d, nil
}

// readDoc and readRecord read the whole file in one pass of the JSON
// decoder; the checks that a typed decode does not make (required fields,
// known states, the message's own strict rules) follow. Pointers tell a
// missing or null field from an empty one.
type readDoc struct {
	Records *[]readRecord   `json:"records"`
	Notice  json.RawMessage `json:"notice"`
}

type readTombstone struct {
	Sender       *string `json:"sender"`
	MsgID        *string `json:"msg_id"`
	TS           *uint64 `json:"ts"`
	Acknowledged bool    `json:"acknowledged"`
	SupersededBy string  `json:"superseded_by"`
	TaskID       string  `json:"task_id"`
	Status       string  `json:"status"`
	ReplyTo      string  `json:"reply_to"`
}

type readRecord struct {
	Message      json.RawMessage `json:"message"`
	Peer         *string         `json:"peer"`
	State        *string         `json:"state"`
	SupersededBy *string         `json:"superseded_by"`
}

func decodeDocument(data []byte) (document, error) {
	var f readDoc
	if err := json.Unmarshal(data, &f); err != nil {
		return document{}, err
	}
	if f.Records == nil {
		return document{}, fmt.Errorf("missing records")
	}
	var d document
	d.records = make([]Record, 0, len(*f.Records))
	for i := range *f.Records {
		r, err := decodeRecord(&(*f.Records)[i])
		if err != nil {
			return document{}, fmt.Errorf("records[%d]: %w", i, err)
		}
		if !r.Unread() {
			// Files written before tombstones, or by the original
			// implementation, keep consumed and superseded records whole.
			d.legacy = append(d.legacy, r)
			continue
		}
		d.records = append(d.records, r)
	}
	if raw := f.Notice; len(raw) > 0 && !isNull(raw) {
		n, err := decodeNotice(raw)
		if err != nil {
			return document{}, fmt.Errorf("notice: %w", err)
		}
		d.notice = &n
	}
	return d, nil
}

func decodeRecord(f *readRecord) (Record, error) {
	if len(f.Message) == 0 {
		return Record{}, fmt.Errorf("missing message")
	}
	var r Record
	var err error
	r.raw = f.Message
	if r.Message, err = identity.DecodeMessage(f.Message); err != nil {
		return Record{}, err
	}
	if f.Peer == nil {
		return Record{}, fmt.Errorf("missing peer")
	}
	r.Peer = *f.Peer
	if f.State == nil {
		return Record{}, fmt.Errorf("missing state")
	}
	if r.State = State(*f.State); !r.State.recordState() {
		return Record{}, fmt.Errorf("unknown record state %q", *f.State)
	}
	if f.SupersededBy != nil {
		r.SupersededBy = *f.SupersededBy
	}
	return r, nil
}

// decodeTombstone decodes one line of the tombstone log.
func decodeTombstone(line []byte) (Tombstone, error) {
	var f readTombstone
	if err := json.Unmarshal(line, &f); err != nil {
		return Tombstone{}, err
	}
	switch {
	case f.Sender == nil:
		return Tombstone{}, fmt.Errorf("missing sender")
	case f.MsgID == nil:
		return Tombstone{}, fmt.Errorf("missing msg_id")
	case f.TS == nil:
		return Tombstone{}, fmt.Errorf("missing ts")
	}
	t := Tombstone{Sender: *f.Sender, MsgID: *f.MsgID, TS: *f.TS, Acknowledged: f.Acknowledged,
		SupersededBy: f.SupersededBy, TaskID: f.TaskID, Status: identity.Status(f.Status), ReplyTo: f.ReplyTo}
	if !t.Status.Valid() {
		return Tombstone{}, fmt.Errorf("unknown status %q", f.Status)
	}
	if !t.Acknowledged && t.SupersededBy == "" {
		return Tombstone{}, fmt.Errorf("neither acknowledged nor superseded")
	}
	return t, nil
}

func decodeNotice(raw json.RawMessage) (Notice, error) {
	o, err := decodeObject(raw)
	if err != nil {
		return Notice{}, err
	}
	var n Notice
	if n.ID, err = o.str("id", true); err != nil {
		return Notice{}, err
	}
	st, err := o.str("state", true)
	if err != nil {
		return Notice{}, err
	}
	if n.State = State(st); !n.State.noticeState() {
		return Notice{}, fmt.Errorf("unknown notice state %q", st)
	}
	elems, err := o.array("messages")
	if err != nil {
		return Notice{}, err
	}
	n.Messages = make([]Receipt, 0, len(elems))
	for i, e := range elems {
		var pair []json.RawMessage
		if err := json.Unmarshal(e, &pair); err != nil || len(pair) != 2 {
			return Notice{}, fmt.Errorf("messages[%d] is not a [sender, msg_id] pair", i)
		}
		var s [2]string
		for j, p := range pair {
			if isNull(p) || p[0] != '"' || json.Unmarshal(p, &s[j]) != nil {
				return Notice{}, fmt.Errorf("messages[%d] is not a [sender, msg_id] pair", i)
			}
		}
		n.Messages = append(n.Messages, Receipt{Sender: s[0], MsgID: s[1]})
	}
	if n.RetryAt, err = o.uint("retry_at", 64); err != nil {
		return Notice{}, err
	}
	attempt, err := o.uint("attempt", 31)
	if err != nil {
		return Notice{}, err
	}
	n.Attempt = int(attempt)
	return n, nil
}
