// Package e2e is end-to-end receipts: the recipient of a message tells its
// sender, in a message of kind [identity.KindReceipt] signed with the
// recipient's own key, how far the message got.
//
// # Stages
//
// [Stored]: the trust gate admitted the message and the mailbox committed
// it. [Surfaced]: the host took a notice of it (a channel notification, a
// codex queue turn), or a tool showed it to the model (receive_messages,
// read_message, message_status, conversation_history). [Acknowledged]:
// the model consumed it. Each stage implies the ones before. None of them
// proves that the model acted on the message.
//
// # Wire format
//
// A receipt is an ordinary signed message (package identity) with kind
// "receipt", a fresh msg_id of its own, and as text the body
// [EncodeBody] writes:
//
//	{"receipts":[{"msg_id":"…","stage":"receiver_stored","ts":1700000000000},…]}
//
// one entry per message and stage, at most [MaxEntries], ts the Unix
// milliseconds at which the recipient saw the stage. The kind is inside
// the signed bytes, so a receipt can never pass for a message or the other
// way round, and everything else a message has (signature, freshness,
// replay set, sealing, the outbox) serves receipts unchanged.
//
// # Negotiation
//
// Receipts go only to keys that announced [identity.CapReceipts] (or sent
// a receipt themselves), as package sealcap remembers them, so a peer of
// the original's format never sees one.
//
// # Files
//
// The recipient keeps what it owes ([Owed]), the sender what it heard
// ([Heard]), each a small locked JSON file per identity and session.
package e2e

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/interlink-go/interlink/internal/identity"
)

// Stage is how far a message got at its recipient. The zero Stage is none.
type Stage int

// The stages, in order.
const (
	Stored Stage = iota + 1
	Surfaced
	Acknowledged
)

var stageNames = [...]string{"", "receiver_stored", "receiver_surfaced", "receiver_acknowledged"}

// String returns the wire name of s, or "" for none.
func (s Stage) String() string {
	if s < 0 || int(s) >= len(stageNames) {
		return ""
	}
	return stageNames[s]
}

// ParseStage returns the stage named name.
func ParseStage(name string) (Stage, bool) {
	for i, n := range stageNames {
		if i > 0 && n == name {
			return Stage(i), true
		}
	}
	return 0, false
}

// MarshalJSON writes the stage's name.
func (s Stage) MarshalJSON() ([]byte, error) { return json.Marshal(s.String()) }

// UnmarshalJSON reads a stage's name; "" is none.
func (s *Stage) UnmarshalJSON(b []byte) error {
	var name string
	if err := json.Unmarshal(b, &name); err != nil {
		return err
	}
	if name == "" {
		*s = 0
		return nil
	}
	st, ok := ParseStage(name)
	if !ok {
		return fmt.Errorf("unknown stage %q", name)
	}
	*s = st
	return nil
}

// MaxEntries bounds the entries of one receipt; more are sent as several.
const MaxEntries = 256

// ErrBody reports a receipt whose text is not a receipt body.
var ErrBody = errors.New("e2e: malformed receipt body")

// Entry says that the message MsgID reached Stage at TS (Unix
// milliseconds, the recipient's clock).
type Entry struct {
	MsgID string
	Stage Stage
	TS    uint64
}

type wireEntry struct {
	MsgID *string `json:"msg_id"`
	Stage *string `json:"stage"`
	TS    *uint64 `json:"ts"`
}

type wireBody struct {
	Receipts *[]wireEntry `json:"receipts"`
}

// EncodeBody returns the text of a receipt holding entries: 1 to
// [MaxEntries] of them.
func EncodeBody(entries []Entry) (string, error) {
	if len(entries) == 0 || len(entries) > MaxEntries {
		return "", fmt.Errorf("%w: %d entries", ErrBody, len(entries))
	}
	w := make([]wireEntry, len(entries))
	for i := range entries {
		e := &entries[i]
		name := e.Stage.String()
		if name == "" {
			return "", fmt.Errorf("%w: no stage for %q", ErrBody, e.MsgID)
		}
		w[i] = wireEntry{MsgID: &e.MsgID, Stage: &name, TS: &e.TS}
	}
	b, err := identity.Marshal(wireBody{Receipts: &w})
	return string(b), err
}

// DecodeBody reads the text of a receipt. The whole body is refused
// ([ErrBody]) when it is not an object with a list of 1 to [MaxEntries]
// entries each with a string msg_id (non-empty, at most
// [identity.MaxReceivedMsgID] bytes), a string stage and an unsigned ts.
// An entry whose stage this version does not know is left out, so a later
// version can add stages.
func DecodeBody(text string) ([]Entry, error) {
	var w wireBody
	if err := json.Unmarshal([]byte(text), &w); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBody, err)
	}
	if w.Receipts == nil || len(*w.Receipts) == 0 || len(*w.Receipts) > MaxEntries {
		return nil, fmt.Errorf("%w: wants 1 to %d entries", ErrBody, MaxEntries)
	}
	out := make([]Entry, 0, len(*w.Receipts))
	for i, e := range *w.Receipts {
		if e.MsgID == nil || e.Stage == nil || e.TS == nil {
			return nil, fmt.Errorf("%w: entry %d lacks msg_id, stage or ts", ErrBody, i)
		}
		if *e.MsgID == "" || len(*e.MsgID) > identity.MaxReceivedMsgID {
			return nil, fmt.Errorf("%w: entry %d: msg_id of %d bytes", ErrBody, i, len(*e.MsgID))
		}
		st, ok := ParseStage(*e.Stage)
		if !ok {
			continue
		}
		out = append(out, Entry{MsgID: *e.MsgID, Stage: st, TS: *e.TS})
	}
	return out, nil
}

// NewReceipt returns the receipt for entries from signer to the key to,
// signed at ts, with a fresh msg_id.
func NewReceipt(signer *identity.Signer, to identity.PublicKey, entries []Entry, ts uint64) (identity.Message, error) {
	text, err := EncodeBody(entries)
	if err != nil {
		return identity.Message{}, err
	}
	id, err := identity.NewMsgID(nil)
	if err != nil {
		return identity.Message{}, err
	}
	m := identity.Message{To: to.String(), Text: text, TS: ts, MsgID: id, Kind: identity.KindReceipt}
	if err := signer.SignMessage(&m); err != nil {
		return identity.Message{}, err
	}
	return m, nil
}
