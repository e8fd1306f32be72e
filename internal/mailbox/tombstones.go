package mailbox

import (
	"bytes"
	"container/heap"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/protocol"
	"github.com/interlink-go/interlink/internal/statefile"
)

// tombLog is this process's view of the tombstone log, the file
// <session>.tombstones.jsonl beside the mailbox: one JSON object per line,
// a later line for the same receipt replacing the earlier one. Between
// compactions the file only grows, so the view is brought up to date by
// reading what was appended since it was last read; a compaction replaces
// the file, and a file that is not the one read before is read in full.
//
// The log is the replay state of the mailbox, and it is keyed by time: a
// tombstone stays until its message's signed time has left the replay
// window, whatever else arrives. Nothing evicts it earlier. What bounds the
// log is the admission rule of [Mailbox.Retain], which gives each sender a
// share of its own ([MaxTombstones] live tombstones and unread records
// together), so one sender can fill only its own share.
//
// Every field is read and changed only while the mailbox file lock is
// held, which orders all access, within this process and across processes.
type tombLog struct {
	path   string
	fi     os.FileInfo     // the file as last read; nil when none was
	offset int64           // bytes read: the end of the last complete line
	lines  int             // complete lines read
	list   []Tombstone     // one per receipt, in the order first seen
	index  map[Receipt]int // receipt → position in list
	tasks  map[taskKey]taskMark

	// byTS holds the signed time and sender of every tombstone in list
	// not yet known to have left the replay window, oldest first; live
	// counts them per sender and expired counts the others. They are
	// brought forward by [tombLog.advance].
	byTS    tsHeap
	live    map[string]int
	expired int
}

// taskKey names the progress of one task: the sender, the route it asked
// for replies on, and the task id, as coalescing compares them.
type taskKey struct{ sender, replyTo, taskID string }

// taskMark is what coalescing needs from the tombstones of one task: the
// final status signed last and the update signed last, if any.
type taskMark struct {
	final, update     string // msg_ids; empty when none
	finalTS, updateTS uint64
}

func newTombLog(path string) *tombLog {
	t := &tombLog{path: path}
	t.reset()
	return t
}

// reset forgets everything read.
func (t *tombLog) reset() {
	t.fi, t.offset, t.lines, t.list = nil, 0, 0, nil
	t.index = make(map[Receipt]int)
	t.tasks = make(map[taskKey]taskMark)
	t.byTS, t.live, t.expired = nil, make(map[string]int), 0
}

// get returns the tombstone of r, if any.
func (t *tombLog) get(r Receipt) (Tombstone, bool) {
	i, ok := t.index[r]
	if !ok {
		return Tombstone{}, false
	}
	return t.list[i], true
}

// task returns the mark of the task k.
func (t *tombLog) task(k taskKey) taskMark { return t.tasks[k] }

// apply records tb, replacing the tombstone of the same receipt.
func (t *tombLog) apply(tb Tombstone) {
	if tb.TaskID != "" && tb.MsgID != "" {
		k := taskKey{tb.Sender, tb.ReplyTo, tb.TaskID}
		m := t.tasks[k]
		switch {
		case tb.Status.Terminal() && (m.final == "" || tb.TS >= m.finalTS):
			m.final, m.finalTS = tb.MsgID, tb.TS
		case tb.Status == identity.StatusUpdate && (m.update == "" || tb.TS >= m.updateTS):
			m.update, m.updateTS = tb.MsgID, tb.TS
		}
		t.tasks[k] = m
	}
	if i, ok := t.index[tb.Receipt()]; ok {
		t.list[i] = tb
		return
	}
	t.index[tb.Receipt()] = len(t.list)
	t.list = append(t.list, tb)
	heap.Push(&t.byTS, tsEntry{ts: tb.TS, sender: tb.Sender})
	t.live[tb.Sender]++
}

// expiredAt reports whether a message signed at ts has left the replay
// window at now: the trust gate would refuse a copy of it as stale.
func expiredAt(ts, now uint64) bool {
	return now > ts && now-ts > uint64(protocol.MaxPast.Milliseconds())
}

// advance counts as expired every tombstone whose message has left the
// replay window at now. Each tombstone is counted once, so the cost is
// logarithmic per tombstone over its life, whatever the log's size.
func (t *tombLog) advance(now uint64) {
	for len(t.byTS) > 0 && expiredAt(t.byTS[0].ts, now) {
		e := heap.Pop(&t.byTS).(tsEntry)
		if t.live[e.sender]--; t.live[e.sender] <= 0 {
			delete(t.live, e.sender)
		}
		t.expired++
	}
}

// liveCount returns how many tombstones of sender are still inside the
// replay window at now.
func (t *tombLog) liveCount(sender string, now uint64) int {
	t.advance(now)
	return t.live[sender]
}

// current returns the tombstones still inside the replay window at now, in
// the order of list.
func (t *tombLog) current(now uint64) []Tombstone {
	out := make([]Tombstone, 0, len(t.list))
	for _, tb := range t.list {
		if !expiredAt(tb.TS, now) {
			out = append(out, tb)
		}
	}
	return out
}

// tsEntry and tsHeap order tombstones by signed time for [tombLog.advance].
type tsEntry struct {
	ts     uint64
	sender string
}

type tsHeap []tsEntry

func (h tsHeap) Len() int           { return len(h) }
func (h tsHeap) Less(i, j int) bool { return h[i].ts < h[j].ts }
func (h tsHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *tsHeap) Push(x any)        { *h = append(*h, x.(tsEntry)) }
func (h *tsHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

// refresh brings the view up to date with the file. A line that is not a
// tombstone is [ErrCorrupt]; an unfinished last line (a writer that
// crashed) is left for the next writer to cut off.
func (t *tombLog) refresh() error {
	fi, err := os.Stat(t.path)
	if errors.Is(err, fs.ErrNotExist) {
		t.reset()
		return nil
	}
	if err != nil {
		return fmt.Errorf("mailbox: tombstones: %w", err)
	}
	if t.fi == nil || !os.SameFile(t.fi, fi) || fi.Size() < t.offset {
		t.reset()
	}
	if fi.Size() == t.offset {
		t.fi = fi
		return nil
	}
	f, err := os.Open(t.path)
	if err != nil {
		return fmt.Errorf("mailbox: tombstones: %w", err)
	}
	defer f.Close()
	if t.fi == nil {
		// Opened by path after the stat: describe what was opened.
		if fi, err = f.Stat(); err != nil {
			return fmt.Errorf("mailbox: tombstones: %w", err)
		}
	}
	tail, err := io.ReadAll(io.NewSectionReader(f, t.offset, fi.Size()-t.offset))
	if err != nil {
		return fmt.Errorf("mailbox: tombstones: %w", err)
	}
	for {
		nl := bytes.IndexByte(tail, '\n')
		if nl < 0 {
			break
		}
		line := tail[:nl]
		tail = tail[nl+1:]
		if len(bytes.TrimSpace(line)) > 0 {
			tb, err := decodeTombstone(line)
			if err != nil {
				t.reset()
				return fmt.Errorf("%w: %s line %d: %w", ErrCorrupt, t.path, t.lines+1, err)
			}
			t.apply(tb)
		}
		t.offset += int64(nl + 1)
		t.lines++
	}
	t.fi = fi
	return nil
}

// add appends tombs to the file and the view. The caller has refreshed the
// view under the same lock, so the file holds exactly offset bytes of
// complete lines and perhaps the unfinished line of a crashed writer,
// which is cut off first. A new file is created by atomic replace, so its
// name is durable once add returns.
func (t *tombLog) add(tombs []Tombstone) error {
	if len(tombs) == 0 {
		return nil
	}
	var buf []byte
	for i := range tombs {
		buf = appendTombstone(buf, &tombs[i])
	}
	if t.fi == nil {
		if err := statefile.WriteAtomic(t.path, buf); err != nil {
			return fmt.Errorf("mailbox: tombstones: %w", err)
		}
	} else if err := t.appendFile(buf); err != nil {
		return fmt.Errorf("mailbox: tombstones: %w", err)
	}
	for _, tb := range tombs {
		t.apply(tb)
	}
	t.offset += int64(len(buf))
	t.lines += len(tombs)
	fi, err := os.Stat(t.path)
	if err != nil {
		t.reset() // read it in full next time
		return nil
	}
	t.fi = fi
	return nil
}

// appendFile writes buf at offset, cutting off whatever lies beyond, and
// syncs the file.
func (t *tombLog) appendFile(buf []byte) error { return statefile.AppendAt(t.path, t.offset, buf) }

// compactFloor is the fewest dead lines that make a compaction due.
const compactFloor = 1024

// compactIfDue rewrites the file with the live tombstones once its dead
// lines (tombstones that left the replay window, and lines replaced by
// later ones) are at least as many as the live ones, and at least
// [compactFloor]. A rewrite then costs no more lines than have died since
// the last one, each of which was appended once, so appending stays
// constant in amortised cost however large the log is. It runs under the
// file lock, so readers of other processes see the new file, with its new
// identity, and read it in full.
func (t *tombLog) compactIfDue(now uint64) error {
	t.advance(now)
	live := len(t.list) - t.expired
	dead := t.lines - live
	if dead < max(compactFloor, live) {
		return nil
	}
	keep := t.current(now)
	var buf []byte
	for i := range keep {
		buf = appendTombstone(buf, &keep[i])
	}
	if err := statefile.WriteAtomic(t.path, buf); err != nil {
		return fmt.Errorf("mailbox: tombstones: %w", err)
	}
	t.reset()
	for _, tb := range keep {
		t.apply(tb)
	}
	t.offset, t.lines = int64(len(buf)), len(keep)
	if fi, err := os.Stat(t.path); err == nil {
		t.fi = fi
	}
	return nil
}
