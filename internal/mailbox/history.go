package mailbox

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/protocol"
	"github.com/interlink-go/interlink/internal/statefile"
)

// Bounds of the history, per sender and day (see [Mailbox.History]).
const (
	// MaxHistoryLines is the most messages of one sender whose text the
	// history keeps for one day (UTC, by signed time). The text of a
	// further message of that sender and day is not kept.
	MaxHistoryLines = 4096
	// MaxHistoryBytes is the most bytes of history lines one sender may
	// have for one day. The text of a message that would go beyond it is
	// not kept.
	MaxHistoryBytes = 16 << 20
)

// histLog is this process's view of the history: the folder
// <session>.history beside the mailbox file, holding one file per UTC day
// of signed time, <YYYY-MM-DD>.jsonl. A line is a message that stopped
// being unread (acknowledged or superseded), as it arrived, with the
// petname it arrived under and its state at that moment; or a marker
// saying that a sender reached its share of that day ([MaxHistoryLines],
// [MaxHistoryBytes]) and that the text of its further messages of the day
// is not kept. Files are only appended to, and removed whole once every
// message their day can hold has left the replay window. So each process
// reads a file once, then only what was appended since, and the cost of
// a change does not grow with the day's traffic.
//
// The history is for showing only. The tombstone log stays the replay
// state: nothing here is asked whether a message is new, and a missing,
// damaged or removed history changes only what the history tools show.
// Where both have a message, the tombstone's state wins (a superseded
// message acknowledged later).
//
// The view keeps, per day, how much each sender has used of its share,
// and an index from receipt to the line's place in its file; the text
// is read from the file when it is shown. Every field is read and changed
// only while the mailbox file lock is held.
type histLog struct {
	dir   string
	log   *slog.Logger
	days  map[string]*histDay
	index map[Receipt]histEntry
	seq   int // lines indexed so far; orders entries as read
}

// histDay is the view of one day's file.
type histDay struct {
	fi      os.FileInfo // the file as last read; nil when none was
	offset  int64       // bytes read: the end of the last complete line
	shares  map[string]*histShare
	markers []histMarker
}

// histShare is what one sender used of its share of one day.
type histShare struct {
	lines int
	bytes int64
	full  bool // a marker says the text of a message was not kept
}

// histMarker is a sender, and its petname, that reached its share of a
// day.
type histMarker struct{ sender, peer string }

// histEntry is where the line of one message is, and what the view needs
// to select it without reading it.
type histEntry struct {
	day          string
	off          int64 // offset of the line in the day's file
	n            int   // length of the line without its newline
	seq          int
	ts           uint64
	peer         string
	state        State
	supersededBy string
}

func newHistLog(dir string, log *slog.Logger) *histLog {
	h := &histLog{dir: dir, log: log}
	h.reset()
	return h
}

func (h *histLog) reset() {
	h.days = make(map[string]*histDay)
	h.index = make(map[Receipt]histEntry)
}

// dayOf returns the UTC day of the signed time ts, as file names give it.
func dayOf(ts uint64) string {
	return time.UnixMilli(int64(min(ts, math.MaxInt64))).UTC().Format(time.DateOnly)
}

// dayEnd returns the first millisecond after the day named day, and false
// when day is not the name of a day.
func dayEnd(day string) (uint64, bool) {
	t, err := time.ParseInLocation(time.DateOnly, day, time.UTC)
	if err != nil || t.Format(time.DateOnly) != day || t.Before(time.UnixMilli(0)) {
		return 0, false
	}
	return identity.Millis(t.Add(24 * time.Hour)), true
}

// keepable reports whether a message signed at ts may have a line in the
// history at now: it is inside the replay window, and not further ahead
// than a window (a time no message passing the trust gate carries), so
// that its day's file is one the next sweep can remove.
func keepable(ts, now uint64) bool {
	return !expiredAt(ts, now) && ts <= now+uint64(protocol.MaxPast.Milliseconds())
}

func (h *histLog) file(day string) string { return filepath.Join(h.dir, day+".jsonl") }

// drop forgets the view of one day.
func (h *histLog) drop(day string) {
	delete(h.days, day)
	for r, e := range h.index {
		if e.day == day {
			delete(h.index, r)
		}
	}
}

// view returns the view of day, made empty when there is none.
func (h *histLog) view(day string) *histDay {
	v := h.days[day]
	if v == nil {
		v = &histDay{shares: make(map[string]*histShare)}
		h.days[day] = v
	}
	return v
}

func (v *histDay) share(sender string) *histShare {
	s := v.shares[sender]
	if s == nil {
		s = &histShare{}
		v.shares[sender] = s
	}
	return s
}

// refresh brings the view up to date with the folder, and removes the
// files whose day has left the replay window: every message such a file
// can hold was signed more than [protocol.MaxPast] before now. It runs
// under the mailbox file lock, which every writer of the folder holds,
// whenever the history is written or read; so a file is gone by the first
// use of the history after its last message left the window.
func (h *histLog) refresh(now uint64) error {
	ents, err := os.ReadDir(h.dir)
	if errors.Is(err, fs.ErrNotExist) {
		h.reset()
		return nil
	}
	if err != nil {
		return fmt.Errorf("mailbox: history: %w", err)
	}
	seen := make(map[string]bool, len(ents))
	for _, e := range ents {
		day, ok := strings.CutSuffix(e.Name(), ".jsonl")
		if !ok || !e.Type().IsRegular() {
			continue
		}
		end, ok := dayEnd(day)
		if !ok {
			continue
		}
		if expiredAt(end-1, now) {
			if err := os.Remove(h.file(day)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("mailbox: history: %w", err)
			}
			continue
		}
		seen[day] = true
		if err := h.read(day); err != nil {
			return err
		}
	}
	for day := range h.days {
		if !seen[day] {
			h.drop(day)
		}
	}
	return nil
}

// read brings the view of one day up to date with its file, reading only
// what was appended since the last look. An unfinished last line (a writer
// that crashed) is left for the next writer to cut off; a line that is not
// a history line is skipped with a warning, since the history only shows.
func (h *histLog) read(day string) error {
	path := h.file(day)
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		h.drop(day)
		return nil
	}
	if err != nil {
		return fmt.Errorf("mailbox: history: %w", err)
	}
	v := h.days[day]
	if v != nil && v.fi != nil && (!os.SameFile(v.fi, fi) || fi.Size() < v.offset) {
		h.drop(day)
		v = nil
	}
	v = h.view(day)
	if fi.Size() == v.offset {
		v.fi = fi
		return nil
	}
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("mailbox: history: %w", err)
	}
	defer f.Close()
	if v.fi == nil {
		if fi, err = f.Stat(); err != nil {
			return fmt.Errorf("mailbox: history: %w", err)
		}
	}
	r := bufio.NewReaderSize(io.NewSectionReader(f, v.offset, fi.Size()-v.offset), 64<<10)
	for {
		line, err := r.ReadBytes('\n')
		if err == io.EOF {
			break // nothing, or an unfinished line
		}
		if err != nil {
			return fmt.Errorf("mailbox: history: %w", err)
		}
		if err := h.apply(day, v, line[:len(line)-1], v.offset); err != nil {
			h.log.Warn("mailbox: history line skipped", "file", path, "offset", v.offset, "err", err)
		}
		v.offset += int64(len(line))
	}
	v.fi = fi
	return nil
}

// apply adds one line of day's file, found at off, to the view.
func (h *histLog) apply(day string, v *histDay, line []byte, off int64) error {
	l, err := decodeHistLine(line)
	if err != nil {
		return err
	}
	s := v.share(l.sender)
	if l.full {
		if !s.full {
			s.full = true
			v.markers = append(v.markers, histMarker{l.sender, l.peer})
		}
		return nil
	}
	s.lines++
	s.bytes += int64(len(line)) + 1
	rc := Receipt{Sender: l.sender, MsgID: l.msgID}
	if _, dup := h.index[rc]; dup {
		return nil
	}
	h.seq++
	h.index[rc] = histEntry{day: day, off: off, n: len(line), seq: h.seq, ts: l.ts, peer: l.peer,
		state: l.state, supersededBy: l.supersededBy}
	return nil
}

// add appends a line for each of recs that the history does not have yet
// and that fits its sender's share of its day, and a marker for a sender
// whose share a message does not fit, once per day. Messages outside the
// window (see [keepable]) get nothing. It refreshes the view first, which
// also removes the files that left the window.
func (h *histLog) add(recs []Record, now uint64) error {
	if err := h.refresh(now); err != nil {
		return err
	}
	bufs := make(map[string][]byte)
	for i := range recs {
		r := &recs[i]
		m := &r.Message
		if !keepable(m.TS, now) {
			continue
		}
		rc := r.Receipt()
		if _, ok := h.index[rc]; ok {
			continue
		}
		day := dayOf(m.TS)
		v := h.view(day)
		s := v.share(m.From)
		line, err := appendHistLine(nil, r)
		if err != nil {
			h.log.Warn("mailbox: history line not encoded", "msg_id", m.MsgID, "sender", m.From, "err", err)
			continue
		}
		if s.lines >= MaxHistoryLines || s.bytes+int64(len(line)) > MaxHistoryBytes {
			if !s.full {
				s.full = true
				v.markers = append(v.markers, histMarker{m.From, r.Peer})
				bufs[day] = appendHistMarker(bufs[day], r)
				h.log.Info("mailbox: sender reached its history share; the text of its further messages that day is not kept",
					"sender", m.From, "day", day)
			}
			continue
		}
		s.lines++
		s.bytes += int64(len(line))
		h.seq++
		h.index[rc] = histEntry{day: day, off: v.offset + int64(len(bufs[day])), n: len(line) - 1, seq: h.seq,
			ts: m.TS, peer: r.Peer, state: r.State, supersededBy: r.SupersededBy}
		bufs[day] = append(bufs[day], line...)
	}
	var errs []error
	for _, day := range slices.Sorted(maps.Keys(bufs)) {
		if err := h.write(day, bufs[day]); err != nil {
			// Read the day's file in full next time: the view may
			// count lines that are not there.
			h.drop(day)
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// write appends buf to day's file, creating it when there is none. The
// view was refreshed under the same lock, so the file holds exactly
// offset bytes of complete lines and perhaps the unfinished line of a
// crashed writer, which is cut off first. A new file is created by atomic
// replace, so its name is durable once write returns; an append is
// synced.
func (h *histLog) write(day string, buf []byte) error {
	v := h.view(day)
	path := h.file(day)
	if v.fi == nil {
		if err := statefile.WriteAtomic(path, buf); err != nil {
			return fmt.Errorf("mailbox: history: %w", err)
		}
	} else if err := appendAt(path, v.offset, buf); err != nil {
		return fmt.Errorf("mailbox: history: %w", err)
	}
	v.offset += int64(len(buf))
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("mailbox: history: %w", err)
	}
	v.fi = fi
	return nil
}

// record returns the message of the entry e of rc as its line keeps it,
// with the petname and the state it had when it stopped being unread. It
// reports false when the line cannot be read back as that message.
func (h *histLog) record(rc Receipt, e histEntry) (Record, bool, error) {
	f, err := os.Open(h.file(e.day))
	if errors.Is(err, fs.ErrNotExist) {
		return Record{}, false, nil
	}
	if err != nil {
		return Record{}, false, fmt.Errorf("mailbox: history: %w", err)
	}
	defer f.Close()
	line := make([]byte, e.n)
	if _, err := f.ReadAt(line, e.off); err != nil {
		if errors.Is(err, io.EOF) {
			return Record{}, false, nil
		}
		return Record{}, false, fmt.Errorf("mailbox: history: %w", err)
	}
	l, err := decodeHistLine(line)
	if err != nil || l.full || l.sender != rc.Sender || l.msgID != rc.MsgID {
		return Record{}, false, nil
	}
	msg, err := identity.DecodeMessage(l.message)
	if err != nil || msg.From != rc.Sender || msg.MsgID != rc.MsgID {
		return Record{}, false, nil
	}
	return Record{Message: msg, Peer: l.peer, State: l.state, SupersededBy: l.supersededBy, raw: l.message}, true, nil
}

// full reports whether sender reached its share of the day of ts.
func (h *histLog) full(sender string, ts uint64) bool {
	v := h.days[dayOf(ts)]
	if v == nil {
		return false
	}
	s := v.shares[sender]
	return s != nil && s.full
}

// fullDays returns the days inside the window on which a sender known as
// peer reached its share, oldest first.
func (h *histLog) fullDays(peer string) []string {
	var out []string
	for day, v := range h.days {
		for _, mk := range v.markers {
			if mk.peer == peer {
				out = append(out, day)
				break
			}
		}
	}
	slices.Sort(out)
	return out
}

// appendHistLine appends the history line of r. It is written by hand,
// with the message's stored bytes where they are known.
func appendHistLine(out []byte, r *Record) ([]byte, error) {
	raw := r.raw
	if bytes.ContainsAny(raw, "\r\n") {
		// Stored bytes from a file written by hand: a line must stay one.
		var buf bytes.Buffer
		if json.Compact(&buf, raw) == nil {
			raw = buf.Bytes()
		} else {
			raw = nil
		}
	}
	if len(raw) == 0 {
		var err error
		if raw, err = r.Message.MarshalJSON(); err != nil {
			return nil, err
		}
	}
	out = appendHistHead(out, r)
	out = append(out, `,"state":`...)
	out = identity.AppendString(out, string(r.State))
	if r.SupersededBy != "" {
		out = append(out, `,"superseded_by":`...)
		out = identity.AppendString(out, r.SupersededBy)
	}
	out = append(out, `,"message":`...)
	out = append(out, raw...)
	return append(out, "}\n"...), nil
}

// appendHistMarker appends the line saying that the sender of r reached
// its share of the day of r, so the text of r and of its sender's later
// messages that day is not kept.
func appendHistMarker(out []byte, r *Record) []byte {
	out = appendHistHead(out, r)
	return append(out, `,"not_kept":true}`+"\n"...)
}

func appendHistHead(out []byte, r *Record) []byte {
	m := &r.Message
	out = append(out, `{"sender":`...)
	out = identity.AppendString(out, m.From)
	out = append(out, `,"msg_id":`...)
	out = identity.AppendString(out, m.MsgID)
	out = append(out, `,"ts":`...)
	out = strconv.AppendUint(out, m.TS, 10)
	out = append(out, `,"peer":`...)
	return identity.AppendString(out, r.Peer)
}

// histLine is a decoded history line.
type histLine struct {
	sender, msgID, peer string
	ts                  uint64
	state               State
	supersededBy        string
	full                bool
	message             json.RawMessage
}

type readHistLine struct {
	Sender       *string         `json:"sender"`
	MsgID        *string         `json:"msg_id"`
	TS           *uint64         `json:"ts"`
	Peer         *string         `json:"peer"`
	State        string          `json:"state"`
	SupersededBy string          `json:"superseded_by"`
	NotKept      bool            `json:"not_kept"`
	Message      json.RawMessage `json:"message"`
}

// decodeHistLine decodes one line of a history file. The message itself
// is decoded only when it is shown.
func decodeHistLine(line []byte) (histLine, error) {
	var f readHistLine
	if err := json.Unmarshal(line, &f); err != nil {
		return histLine{}, err
	}
	switch {
	case f.Sender == nil:
		return histLine{}, fmt.Errorf("missing sender")
	case f.MsgID == nil:
		return histLine{}, fmt.Errorf("missing msg_id")
	case f.TS == nil:
		return histLine{}, fmt.Errorf("missing ts")
	case f.Peer == nil:
		return histLine{}, fmt.Errorf("missing peer")
	}
	l := histLine{sender: *f.Sender, msgID: *f.MsgID, ts: *f.TS, peer: *f.Peer, full: f.NotKept}
	if l.full {
		return l, nil
	}
	if l.state = State(f.State); !l.state.recordState() {
		return histLine{}, fmt.Errorf("unknown record state %q", f.State)
	}
	if len(f.Message) == 0 || isNull(f.Message) {
		return histLine{}, fmt.Errorf("missing message")
	}
	l.supersededBy, l.message = f.SupersededBy, f.Message
	return l, nil
}

// appendAt writes buf at offset of the file at path, cutting off whatever
// lies beyond, and syncs the file.
func appendAt(path string, offset int64, buf []byte) (err error) {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}()
	if err := f.Truncate(offset); err != nil {
		return err
	}
	if _, err := f.WriteAt(buf, offset); err != nil {
		return err
	}
	return f.Sync()
}
