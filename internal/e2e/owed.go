package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/paths"
	"github.com/interlink-go/interlink/internal/statefile"
)

// Bounds of the files.
const (
	// MaxOwed bounds the messages the owed file follows; one more
	// forgets the one noted longest ago.
	MaxOwed = 4096
	// MaxHeard bounds the sent messages the heard file keeps a stage of.
	MaxHeard = 4096
	// forgetAfter is how long an owed entry is kept: a day, the freshness
	// window of the message it is about, and an hour.
	forgetAfter = 25 * time.Hour
	// goneAfter is how long an entry whose every stage was sent is kept
	// once its message left the mailbox's unread records (acknowledged,
	// superseded or dropped) without this process noting it: longer than
	// any step between a mailbox change and the note that follows it.
	goneAfter = 10 * time.Second
)

// ErrCorrupt reports a receipts file that does not parse. It is never
// overwritten.
var ErrCorrupt = errors.New("e2e: corrupt receipts file")

// owedEntry is one received message whose sender is owed receipts.
type owedEntry struct {
	Sender string `json:"sender"` // the sender's key
	MsgID  string `json:"msg_id"`
	Route  string `json:"route"` // where receipts go, key#session or the bare key
	Want   Stage  `json:"want"`  // the furthest stage reached
	WantTS uint64 `json:"want_ts"`
	Sent   Stage  `json:"sent"` // the furthest stage queued in a receipt
	At     uint64 `json:"at"`   // when the entry was made
}

type owedDoc struct {
	Owed []owedEntry `json:"owed"`
}

// Owed is the file of receipts a session owes the senders of messages it
// received: <root>/receipts-owed/<key>/<session>.json. Noting a stage is
// one locked write, before the caller goes on, so a restart loses nothing
// noted; [Owed.Flush] queues what is owed in the outbox and only then
// records it as sent, so a crash between the two sends a stage twice,
// which the sender ignores, and never loses one.
type Owed struct {
	path, lock string
	now        func() time.Time
}

// OpenOwed returns the owed file of the identity own and session under
// root. Nothing is created until something is noted.
func OpenOwed(root string, own identity.PublicKey, session string, now func() time.Time) (*Owed, error) {
	f, err := paths.SessionFile(root, paths.ReceiptsOwed, own, session)
	if err != nil {
		return nil, fmt.Errorf("e2e: open: %w", err)
	}
	if now == nil {
		now = time.Now
	}
	return &Owed{path: f.Path(), lock: f.Lock(), now: now}, nil
}

// Path returns the file's path.
func (o *Owed) Path() string { return o.path }

func decodeOwed(data []byte, exists bool) (owedDoc, error) {
	var d owedDoc
	if !exists {
		return d, nil
	}
	if err := json.Unmarshal(data, &d); err != nil {
		return owedDoc{}, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	return d, nil
}

func (o *Owed) update(ctx context.Context, fn func(d *owedDoc) bool) error {
	return statefile.UpdateContext(ctx, o.path, o.lock, func(data []byte, exists bool) ([]byte, error) {
		d, err := decodeOwed(data, exists)
		if err != nil {
			return nil, fmt.Errorf("%w (%s)", err, o.path)
		}
		if !fn(&d) {
			return nil, nil
		}
		o.prune(&d)
		return identity.Marshal(d)
	})
}

// prune forgets entries whose last stage was sent, entries older than
// forgetAfter, and the oldest beyond MaxOwed.
func (o *Owed) prune(d *owedDoc) {
	now := identity.Millis(o.now())
	old := uint64(forgetAfter.Milliseconds())
	d.Owed = slices.DeleteFunc(d.Owed, func(e owedEntry) bool {
		return e.Sent >= Acknowledged || (now > old && e.At < now-old)
	})
	if n := len(d.Owed) - MaxOwed; n > 0 {
		d.Owed = d.Owed[n:] // entries are appended in the order noted
	}
}

// Note records that the message msgID from sender reached stage. create
// makes an entry when there is none, with route the receipts' destination;
// without it, a message nobody is owed receipts for is left alone. It
// reports whether the file changed, that is whether there is something new
// to send.
func (o *Owed) Note(ctx context.Context, sender, msgID, route string, stage Stage, create bool) (bool, error) {
	changed := false
	err := o.update(ctx, func(d *owedDoc) bool {
		now := identity.Millis(o.now())
		for i := range d.Owed {
			e := &d.Owed[i]
			if e.Sender == sender && e.MsgID == msgID {
				if e.Route == "" && route != "" {
					e.Route, changed = route, true
				}
				if stage > e.Want {
					e.Want, e.WantTS, changed = stage, now, true
				}
				return changed
			}
		}
		if !create {
			return false
		}
		d.Owed = append(d.Owed, owedEntry{Sender: sender, MsgID: msgID, Route: route, Want: stage, WantTS: now, At: now})
		changed = true
		return true
	})
	if err != nil {
		return false, fmt.Errorf("e2e: note %s: %w", stage, err)
	}
	return changed, nil
}

// Batch is the entries of one receipt to send: to the key To, on Route.
type Batch struct {
	To      string
	Route   string
	Entries []Entry
}

// Seed names a message the mailbox holds, and where receipts about it go.
type Seed struct {
	Sender, MsgID, Route string
}

// FlushOptions are what [Owed.Flush] learns from the mailbox and the
// capabilities file. Every field may be nil.
type FlushOptions struct {
	// Stored are the messages the mailbox holds unread, from senders that
	// take receipts: each one the file does not follow yet is owed its
	// stored stage. This is how the stored stage is noted, so it costs
	// no write of its own per message and survives any crash: the mailbox
	// is its record.
	Stored []Seed
	// Keep says whether receipts still go to a sender's key; the entries
	// of one it refuses are forgotten unsent.
	Keep func(sender string) bool
	// Live says whether a message is still unread in the mailbox; an
	// entry whose every stage was sent and whose message is not is
	// forgotten after goneAfter, so that the file holds about the unread
	// messages, not the day's.
	Live func(sender, msgID string) bool
}

// Flush hands every owed stage not yet sent to send, one [Batch] per
// sender and route of at most [MaxEntries] entries, and records the
// stages of each batch send accepted as sent. An entry without a route
// (noted by [Owed.Note] before its stored stage) takes its seed's; one
// that still has none is forgotten, for there is nowhere to send it.
// Flush reports how many batches went.
func (o *Owed) Flush(ctx context.Context, opts *FlushOptions, send func(b Batch) error) (int, error) {
	var fo FlushOptions
	if opts != nil {
		fo = *opts
	}
	sent := 0
	var sendErr error
	err := o.update(ctx, func(d *owedDoc) bool {
		changed := false
		now := identity.Millis(o.now())
		if len(fo.Stored) > 0 {
			at := make(map[[2]string]int, len(d.Owed))
			for i, e := range d.Owed {
				at[[2]string{e.Sender, e.MsgID}] = i
			}
			for _, sd := range fo.Stored {
				i, ok := at[[2]string{sd.Sender, sd.MsgID}]
				switch {
				case !ok:
					d.Owed = append(d.Owed, owedEntry{Sender: sd.Sender, MsgID: sd.MsgID, Route: sd.Route, Want: Stored, WantTS: now, At: now})
					changed = true
				case d.Owed[i].Route == "":
					d.Owed[i].Route = sd.Route
					changed = true
				}
			}
		}
		if fo.Live != nil {
			gone := uint64(goneAfter.Milliseconds())
			n := len(d.Owed)
			d.Owed = slices.DeleteFunc(d.Owed, func(e owedEntry) bool {
				return e.Want <= e.Sent && e.At+gone < now && !fo.Live(e.Sender, e.MsgID)
			})
			changed = changed || len(d.Owed) != n
		}
		type dest struct{ to, route string }
		groups := map[dest][]int{}
		var order []dest
		dropped := map[string]bool{}
		for i := range d.Owed {
			e := &d.Owed[i]
			if e.Want <= e.Sent {
				continue
			}
			drop := e.Route == ""
			if !drop && fo.Keep != nil {
				var seen bool
				if drop, seen = dropped[e.Sender]; !seen {
					drop = !fo.Keep(e.Sender)
					dropped[e.Sender] = drop
				}
			}
			if drop {
				e.Sent, changed = Acknowledged, true // forgotten by prune
				continue
			}
			k := dest{e.Sender, e.Route}
			if _, ok := groups[k]; !ok {
				order = append(order, k)
			}
			groups[k] = append(groups[k], i)
		}
		for _, k := range order {
			idx := groups[k]
			for len(idx) > 0 && sendErr == nil {
				n := min(len(idx), MaxEntries)
				b := Batch{To: k.to, Route: k.route, Entries: make([]Entry, n)}
				for j, i := range idx[:n] {
					e := &d.Owed[i]
					b.Entries[j] = Entry{MsgID: e.MsgID, Stage: e.Want, TS: e.WantTS}
				}
				if sendErr = send(b); sendErr != nil {
					break
				}
				for _, i := range idx[:n] {
					d.Owed[i].Sent = d.Owed[i].Want
				}
				sent++
				changed = true
				idx = idx[n:]
			}
		}
		return changed
	})
	if err == nil {
		err = sendErr
	}
	if err != nil {
		return sent, fmt.Errorf("e2e: flush: %w", err)
	}
	return sent, nil
}

// Senders returns the keys of the senders with stages not yet sent.
func (o *Owed) Senders() ([]string, error) {
	data, exists, err := statefile.Read(o.path)
	if err != nil {
		return nil, err
	}
	d, err := decodeOwed(data, exists)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range d.Owed {
		if e.Want > e.Sent && !slices.Contains(out, e.Sender) {
			out = append(out, e.Sender)
		}
	}
	return out, nil
}
