// Package history is the day files that keep the text of received
// messages after they stop being unread, so that a session can still show
// them for as long as a copy could arrive again: the replay window the
// trust gate applies ([protocol.MaxPast]).
//
// A [Log] is one folder of append-only files, one per UTC day of signed
// time. A line is a message as it arrived, with the petname it arrived
// under and its state when it stopped being unread; or a marker that its
// sender used up its share of the day ([MaxLines], [MaxBytes]), after
// which the text of that sender's further messages of the day is not kept.
// A day's file is removed whole once every message it can hold has left
// the window. The package knows nothing of the mailbox's records or
// tombstones; package mailbox owns the folder, holds its lock around every
// call, and decides which states a line may carry.
package history

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"iter"
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

// Bounds of the history, per sender and day.
const (
	// MaxLines is the most messages of one sender whose text the history
	// keeps for one day (UTC, by signed time). The text of a further
	// message of that sender and day is not kept.
	MaxLines = 4096
	// MaxBytes is the most bytes of history lines one sender may have for
	// one day. The text of a message that would go beyond it is not kept.
	MaxBytes = 16 << 20
)

// Key names a message: its sender's key and its msg_id.
type Key struct {
	Sender string
	MsgID  string
}

// Line is one message as the history keeps it: the message as it arrived
// (Raw, its bytes as stored, when known), the petname it arrived under,
// and its state and successor when it stopped being unread.
type Line struct {
	Message      identity.Message
	Raw          json.RawMessage
	Peer         string
	State        string
	SupersededBy string
}

// Entry is where the line of one message is, and what a caller needs to
// select it without reading it: its day, the order it was indexed in
// (Seq), its signed time, petname, state and successor.
type Entry struct {
	Day          string
	Seq          int
	TS           uint64
	Peer         string
	State        string
	SupersededBy string
	off          int64 // offset of the line in the day's file
	n            int   // length of the line without its newline
}

// Log is this process's view of a history: a folder (the mailbox's
// <session>.history beside its file) holding one file per UTC day
// of signed time, <YYYY-MM-DD>.jsonl. A line is a message that stopped
// being unread (acknowledged or superseded), as it arrived, with the
// petname it arrived under and its state at that moment; or a marker
// saying that a sender reached its share of that day ([MaxLines],
// [MaxBytes]) and that the text of its further messages of the day
// is not kept. Files are only appended to, and removed whole once every
// message their day can hold has left the replay window. So each process
// reads a file once, then only what was appended since, and the cost of
// a change does not grow with the day's traffic.
//
// The history is for showing only. The mailbox's tombstone log stays the
// replay state: nothing here is asked whether a message is new, and a
// missing, damaged or removed history changes only what the history
// tools show.
//
// The view keeps, per day, how much each sender has used of its share,
// and an index from [Key] to the line's place in its file ([Entry]); the
// text is read from the file when it is shown ([Log.Read]). A Log is not
// safe for concurrent use: the caller serializes every call, across
// processes too, with a lock every writer of the folder holds (the
// mailbox's file lock).
type Log struct {
	dir   string
	valid func(state string) bool
	log   *slog.Logger
	days  map[string]*histDay
	index map[Key]Entry
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

// New returns the view of the history in dir, empty until
// [Log.Refresh]. valid says which states a line may carry; a line with
// another is skipped, as a damaged one is, with a warning to log.
func New(dir string, valid func(state string) bool, log *slog.Logger) *Log {
	h := &Log{dir: dir, valid: valid, log: log}
	h.reset()
	return h
}

func (h *Log) reset() {
	h.days = make(map[string]*histDay)
	h.index = make(map[Key]Entry)
}

// expired reports whether a message signed at ts has left the replay
// window at now: the trust gate would refuse a copy of it as stale.
func expired(ts, now uint64) bool {
	return now > ts && now-ts > uint64(protocol.MaxPast.Milliseconds())
}

// Day returns the UTC day of the signed time ts, as file names give it.
func Day(ts uint64) string {
	return time.UnixMilli(int64(min(ts, math.MaxInt64))).UTC().Format(time.DateOnly)
}

// DayEnd returns the first millisecond after the day named day, and false
// when day is not the name of a day.
func DayEnd(day string) (uint64, bool) {
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
	return !expired(ts, now) && ts <= now+uint64(protocol.MaxPast.Milliseconds())
}

func (h *Log) file(day string) string { return filepath.Join(h.dir, day+".jsonl") }

// drop forgets the view of one day.
func (h *Log) drop(day string) {
	delete(h.days, day)
	for r, e := range h.index {
		if e.Day == day {
			delete(h.index, r)
		}
	}
}

// view returns the view of day, made empty when there is none.
func (h *Log) view(day string) *histDay {
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

// Refresh brings the view up to date with the folder, and removes the
// files whose day has left the replay window: every message such a file
// can hold was signed more than [protocol.MaxPast] before now. It runs
// under the lock every writer of the folder holds (the mailbox's file lock),
// whenever the history is written or read; so a file is gone by the first
// use of the history after its last message left the window.
func (h *Log) Refresh(now uint64) error {
	ents, err := os.ReadDir(h.dir)
	if errors.Is(err, fs.ErrNotExist) {
		h.reset()
		return nil
	}
	if err != nil {
		return fmt.Errorf("history: %w", err)
	}
	seen := make(map[string]bool, len(ents))
	for _, e := range ents {
		day, ok := strings.CutSuffix(e.Name(), ".jsonl")
		if !ok || !e.Type().IsRegular() {
			continue
		}
		end, ok := DayEnd(day)
		if !ok {
			continue
		}
		if expired(end-1, now) {
			if err := os.Remove(h.file(day)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("history: %w", err)
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
func (h *Log) read(day string) error {
	path := h.file(day)
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		h.drop(day)
		return nil
	}
	if err != nil {
		return fmt.Errorf("history: %w", err)
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
		return fmt.Errorf("history: %w", err)
	}
	defer f.Close()
	if v.fi == nil {
		if fi, err = f.Stat(); err != nil {
			return fmt.Errorf("history: %w", err)
		}
	}
	r := bufio.NewReaderSize(io.NewSectionReader(f, v.offset, fi.Size()-v.offset), 64<<10)
	for {
		line, err := r.ReadBytes('\n')
		if err == io.EOF {
			break // nothing, or an unfinished line
		}
		if err != nil {
			return fmt.Errorf("history: %w", err)
		}
		if err := h.apply(day, v, line[:len(line)-1], v.offset); err != nil {
			h.log.Warn("history: line skipped", "file", path, "offset", v.offset, "err", err)
		}
		v.offset += int64(len(line))
	}
	v.fi = fi
	return nil
}

// apply adds one line of day's file, found at off, to the view.
func (h *Log) apply(day string, v *histDay, line []byte, off int64) error {
	l, err := h.decode(line)
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
	k := Key{Sender: l.sender, MsgID: l.msgID}
	if _, dup := h.index[k]; dup {
		return nil
	}
	h.seq++
	h.index[k] = Entry{Day: day, off: off, n: len(line), Seq: h.seq, TS: l.ts, Peer: l.peer,
		State: l.state, SupersededBy: l.supersededBy}
	return nil
}

// Add appends a line for each of lines that the history does not have yet
// and that fits its sender's share of its day, and a marker for a sender
// whose share a message does not fit, once per day. Messages outside the
// window (see [keepable]) get nothing. It refreshes the view first, which
// also removes the files that left the window.
func (h *Log) Add(lines []Line, now uint64) error {
	if err := h.Refresh(now); err != nil {
		return err
	}
	bufs := make(map[string][]byte)
	for i := range lines {
		r := &lines[i]
		m := &r.Message
		if !keepable(m.TS, now) {
			continue
		}
		k := Key{Sender: m.From, MsgID: m.MsgID}
		if _, ok := h.index[k]; ok {
			continue
		}
		day := Day(m.TS)
		v := h.view(day)
		s := v.share(m.From)
		line, err := AppendLine(nil, r)
		if err != nil {
			h.log.Warn("history: line not encoded", "msg_id", m.MsgID, "sender", m.From, "err", err)
			continue
		}
		if s.lines >= MaxLines || s.bytes+int64(len(line)) > MaxBytes {
			if !s.full {
				s.full = true
				v.markers = append(v.markers, histMarker{m.From, r.Peer})
				bufs[day] = appendMarker(bufs[day], r)
				h.log.Info("history: sender reached its history share; the text of its further messages that day is not kept",
					"sender", m.From, "day", day)
			}
			continue
		}
		s.lines++
		s.bytes += int64(len(line))
		h.seq++
		h.index[k] = Entry{Day: day, off: v.offset + int64(len(bufs[day])), n: len(line) - 1, Seq: h.seq,
			TS: m.TS, Peer: r.Peer, State: r.State, SupersededBy: r.SupersededBy}
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
func (h *Log) write(day string, buf []byte) error {
	v := h.view(day)
	path := h.file(day)
	if v.fi == nil {
		if err := statefile.WriteAtomic(path, buf); err != nil {
			return fmt.Errorf("history: %w", err)
		}
	} else if err := statefile.AppendAt(path, v.offset, buf); err != nil {
		return fmt.Errorf("history: %w", err)
	}
	v.offset += int64(len(buf))
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("history: %w", err)
	}
	v.fi = fi
	return nil
}

// Entry returns the entry of the message k, if the history has its line.
func (h *Log) Entry(k Key) (Entry, bool) {
	e, ok := h.index[k]
	return e, ok
}

// Entries yields every message the history has a line for, in no order.
func (h *Log) Entries() iter.Seq2[Key, Entry] { return maps.All(h.index) }

// Read returns the line of the entry e of k, with the message decoded. It
// reports false when the line cannot be read back as that message.
func (h *Log) Read(k Key, e Entry) (Line, bool, error) {
	f, err := os.Open(h.file(e.Day))
	if errors.Is(err, fs.ErrNotExist) {
		return Line{}, false, nil
	}
	if err != nil {
		return Line{}, false, fmt.Errorf("history: %w", err)
	}
	defer f.Close()
	line := make([]byte, e.n)
	if _, err := f.ReadAt(line, e.off); err != nil {
		if errors.Is(err, io.EOF) {
			return Line{}, false, nil
		}
		return Line{}, false, fmt.Errorf("history: %w", err)
	}
	l, err := h.decode(line)
	if err != nil || l.full || l.sender != k.Sender || l.msgID != k.MsgID {
		return Line{}, false, nil
	}
	msg, err := identity.DecodeMessage(l.message)
	if err != nil || msg.From != k.Sender || msg.MsgID != k.MsgID {
		return Line{}, false, nil
	}
	return Line{Message: msg, Peer: l.peer, State: l.state, SupersededBy: l.supersededBy, Raw: l.message}, true, nil
}

// Full reports whether sender reached its share of the day of ts.
func (h *Log) Full(sender string, ts uint64) bool {
	v := h.days[Day(ts)]
	if v == nil {
		return false
	}
	s := v.shares[sender]
	return s != nil && s.full
}

// FullDays returns the days inside the window on which a sender known as
// peer reached its share, oldest first.
func (h *Log) FullDays(peer string) []string {
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

// AppendLine appends the history line of r to out. It is written by hand,
// with the message's stored bytes where they are known.
func AppendLine(out []byte, r *Line) ([]byte, error) {
	raw := r.Raw
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
	out = appendHead(out, r)
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

// appendMarker appends the line saying that the sender of r reached
// its share of the day of r, so the text of r and of its sender's later
// messages that day is not kept.
func appendMarker(out []byte, r *Line) []byte {
	out = appendHead(out, r)
	return append(out, `,"not_kept":true}`+"\n"...)
}

func appendHead(out []byte, r *Line) []byte {
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
	state               string
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

// decode decodes one line of a history file. The message itself is
// decoded only when it is shown.
func (h *Log) decode(line []byte) (histLine, error) {
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
	if l.state = f.State; !h.valid(l.state) {
		return histLine{}, fmt.Errorf("unknown record state %q", f.State)
	}
	if len(f.Message) == 0 || bytes.Equal(f.Message, []byte("null")) {
		return histLine{}, fmt.Errorf("missing message")
	}
	l.supersededBy, l.message = f.SupersededBy, f.Message
	return l, nil
}
