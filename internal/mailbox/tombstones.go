package mailbox

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

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
// Every field is read and changed only while the mailbox file lock is
// held, which orders all access, within this process and across processes.
type tombLog struct {
	path   string
	fi     os.FileInfo     // the file as last read; nil when none was
	offset int64           // bytes read: the end of the last complete line
	lines  int             // complete lines read
	list   []Tombstone     // one per receipt, in the order first seen
	index  map[Receipt]int // receipt → position in list
	oldest uint64          // the smallest TS in list; 0 when list is empty
}

func newTombLog(path string) *tombLog {
	return &tombLog{path: path, index: make(map[Receipt]int)}
}

// reset forgets everything read.
func (t *tombLog) reset() {
	t.fi, t.offset, t.lines, t.list, t.oldest = nil, 0, 0, nil, 0
	t.index = make(map[Receipt]int)
}

// get returns the tombstone of r, if any.
func (t *tombLog) get(r Receipt) (Tombstone, bool) {
	i, ok := t.index[r]
	if !ok {
		return Tombstone{}, false
	}
	return t.list[i], true
}

// apply records tb, replacing the tombstone of the same receipt.
func (t *tombLog) apply(tb Tombstone) {
	if i, ok := t.index[tb.Receipt()]; ok {
		t.list[i] = tb
		return
	}
	t.index[tb.Receipt()] = len(t.list)
	t.list = append(t.list, tb)
	if len(t.list) == 1 || tb.TS < t.oldest {
		t.oldest = tb.TS
	}
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
func (t *tombLog) appendFile(buf []byte) (err error) {
	f, err := os.OpenFile(t.path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}()
	if err := f.Truncate(t.offset); err != nil {
		return err
	}
	if _, err := f.WriteAt(buf, t.offset); err != nil {
		return err
	}
	return f.Sync()
}

// compactIfDue rewrites the file with the live tombstones when enough of
// it is dead weight: tombstones older than the replay window at now, lines
// replaced by later ones, or tombstones beyond [MaxTombstones] (the oldest
// go). It runs under the file lock, so readers of other processes see the
// new file, with its new identity, and read it in full.
func (t *tombLog) compactIfDue(now uint64) error {
	maxPast := uint64(protocol.MaxPast.Milliseconds())
	stale := t.lines - len(t.list)
	anyExpired := len(t.list) > 0 && now > t.oldest && now-t.oldest > maxPast
	if !anyExpired && stale < max(1024, len(t.list)) && len(t.list) <= MaxTombstones {
		return nil // the common case, decided without a pass over the list
	}
	expired := 0
	for i := range t.list {
		if now > t.list[i].TS && now-t.list[i].TS > maxPast {
			expired++
		}
	}
	over := len(t.list) - expired - MaxTombstones
	if !(expired > 0 && expired*8 >= len(t.list)) && stale < max(1024, len(t.list)) && over <= 0 {
		return nil
	}
	keep := make([]Tombstone, 0, len(t.list)-expired)
	for _, tb := range t.list {
		if !(now > tb.TS && now-tb.TS > maxPast) {
			keep = append(keep, tb)
		}
	}
	if over > 0 {
		keep = keep[over:]
	}
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
