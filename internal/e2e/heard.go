package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/paths"
	"github.com/interlink-go/interlink/internal/statefile"
)

// Status is the furthest stage heard about one sent message.
type Status struct {
	Stage Stage `json:"stage"`
	// TS is when the recipient saw the stage, by its clock (Unix ms).
	TS uint64 `json:"ts"`
	// Signer is the key that signed the receipt; Peer its petname then.
	Signer string `json:"signer"`
	Peer   string `json:"peer"`
	// Heard is when the receipt arrived here (Unix ms, local clock).
	Heard uint64 `json:"heard"`
}

type heardDoc struct {
	Msgs map[string]Status `json:"msgs"`
}

// Drop reasons of receipt entries, as [Heard.Apply] counts them and the
// agent logs and counts them like the gate's.
const (
	// ReasonUnknownMsg: the entry names no message this session sent.
	ReasonUnknownMsg = "receipt_unknown_msg"
	// ReasonWrongSigner: the message was addressed to another key than
	// the receipt's signer.
	ReasonWrongSigner = "receipt_wrong_signer"
	// ReasonFuture: the entry's time is after the receipt's signing time.
	ReasonFuture = "receipt_future_stage"
	// ReasonMalformed: the receipt's text is not a receipt body.
	ReasonMalformed = "receipt_malformed"
)

// Heard is the file of stages heard about the messages a session sent:
// <root>/receipts-heard/<key>/<session>.json.
type Heard struct {
	path, lock string
	now        func() time.Time
}

// OpenHeard returns the heard file of the identity own and session under
// root. Nothing is created until a receipt is applied.
func OpenHeard(root string, own identity.PublicKey, session string, now func() time.Time) (*Heard, error) {
	f, err := paths.SessionFile(root, paths.ReceiptsHeard, own, session)
	if err != nil {
		return nil, fmt.Errorf("e2e: open: %w", err)
	}
	if now == nil {
		now = time.Now
	}
	return &Heard{path: f.Path(), lock: f.Lock(), now: now}, nil
}

// Path returns the file's path.
func (h *Heard) Path() string { return h.path }

func decodeHeard(data []byte, exists bool) (heardDoc, error) {
	d := heardDoc{Msgs: map[string]Status{}}
	if !exists {
		return d, nil
	}
	if err := json.Unmarshal(data, &d); err != nil {
		return heardDoc{}, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	if d.Msgs == nil {
		d.Msgs = map[string]Status{}
	}
	return d, nil
}

// Get returns the furthest stage heard about the sent message msgID.
func (h *Heard) Get(msgID string) (Status, bool, error) {
	data, exists, err := statefile.Read(h.path)
	if err != nil {
		return Status{}, false, err
	}
	d, err := decodeHeard(data, exists)
	if err != nil {
		return Status{}, false, fmt.Errorf("%w (%s)", err, h.path)
	}
	st, ok := d.Msgs[msgID]
	return st, ok, nil
}

// Sent says what this session sent as msgID: the key it was addressed
// to, and whether it sent it at all.
type Sent func(msgID string) (to string, ok bool, err error)

// Apply records the entries of a receipt signed by signer (petname peer)
// at ts. An entry counts only when sent says this session sent the
// message (or the file holds a stage of it already, signed by the same
// key), to signer itself, and its time is not after ts; anything else
// is dropped and counted by reason in the answer. An entry behind the
// stage already held changes nothing. A failure of sent or of the file is
// an error, and nothing is recorded.
func (h *Heard) Apply(ctx context.Context, signer, peer string, ts uint64, entries []Entry, sent Sent) (map[string]int, error) {
	drops := map[string]int{}
	type ok struct {
		id string
		e  Entry
	}
	var good []ok
	for _, e := range entries {
		to, found, err := sent(e.MsgID)
		if err == nil && !found {
			// The outbox keeps only its newest finished messages; one it
			// forgot still counts when a receipt from the same key told
			// of it before, when the outbox still knew it.
			if held, ok, herr := h.Get(e.MsgID); herr == nil && ok {
				to, found = held.Signer, true
			}
		}
		switch {
		case err != nil:
			return nil, fmt.Errorf("e2e: look up %s: %w", e.MsgID, err)
		case !found:
			drops[ReasonUnknownMsg]++
		case to != signer:
			drops[ReasonWrongSigner]++
		case e.TS > ts:
			drops[ReasonFuture]++
		default:
			good = append(good, ok{e.MsgID, e})
		}
	}
	if len(good) == 0 {
		return drops, nil
	}
	err := statefile.UpdateContext(ctx, h.path, h.lock, func(data []byte, exists bool) ([]byte, error) {
		d, err := decodeHeard(data, exists)
		if err != nil {
			return nil, fmt.Errorf("%w (%s)", err, h.path)
		}
		now := identity.Millis(h.now())
		changed := false
		for _, g := range good {
			if held, ok := d.Msgs[g.id]; ok && held.Stage >= g.e.Stage {
				continue
			}
			d.Msgs[g.id] = Status{Stage: g.e.Stage, TS: g.e.TS, Signer: signer, Peer: peer, Heard: now}
			changed = true
		}
		if !changed {
			return nil, nil
		}
		if n := len(d.Msgs) - MaxHeard; n > 0 {
			ids := make([]string, 0, len(d.Msgs))
			for id := range d.Msgs {
				ids = append(ids, id)
			}
			slices.SortFunc(ids, func(a, b string) int {
				if c := d.Msgs[a].Heard; c != d.Msgs[b].Heard {
					if c < d.Msgs[b].Heard {
						return -1
					}
					return 1
				}
				return strings.Compare(a, b)
			})
			for _, id := range ids[:n] {
				delete(d.Msgs, id)
			}
		}
		return identity.Marshal(d)
	})
	if err != nil {
		return nil, fmt.Errorf("e2e: record receipt: %w", err)
	}
	return drops, nil
}

// Describe returns the line a tool shows for st at now: the stage, when
// the recipient saw it, who signed it, and how long ago it came.
func Describe(st Status, now time.Time) string {
	at := time.UnixMilli(int64(st.TS)).UTC().Format(time.RFC3339)
	ago := now.Sub(time.UnixMilli(int64(st.Heard))).Truncate(time.Second)
	if ago < 0 {
		ago = 0
	}
	return fmt.Sprintf("receipt: %s at %s, signed by %s (%s); the last receipt came %s ago",
		st.Stage, at, st.Peer, identity.Fingerprint(st.Signer), ago)
}

// Now returns the clock of h.
func (h *Heard) Now() time.Time { return h.now() }
