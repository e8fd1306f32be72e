// Package inbox is the Claude notice inbox of one session and the Stop-hook
// listener that reads it.
//
// The inbox is a JSON Lines file, inbox/<session>.jsonl under the state
// root. The MCP server appends records to it (inbox notices and pairing
// notices, never message bodies); `interlink-mcp wait`, started by Claude
// Code's Stop hook, reads the records past its cursor, prints them for the
// model and exits, which wakes the idle session. The two processes share
// nothing but these files:
//
//	inbox/<session>.jsonl     the records, one JSON object per line
//	inbox/<session>.cursor    the byte offset up to which records were shown
//	inbox/<session>.lock      held by the one listener of the session
//	inbox/<session>.io-lock   taken around every append and every read
//
// An append that died half way leaves a line without its newline. Such a
// torn tail is never read as a record: the reader stops before it, and the
// next append cuts it off before writing. Its record was never confirmed to
// its writer, which tries again. The cursor moves only over the lines a
// listener has printed, so a record appended while a batch was read is
// never skipped.
//
// # The listener
//
// [Inbox.RunListener] is the whole Stop-hook protocol: one listener per
// session (the others step aside), a watch on the process that started it
// (a listener whose host went away ends without consuming anything), the
// records shown before the cursor moves over them, and the renewal notice
// before Claude Code's one-hour limit. Its caller exits with [ExitWake]
// when it showed something, which wakes the session, and never with that
// status on an error.
//
// # Compaction
//
// Once every complete line has been shown, the listener's commit empties
// the file: under the I/O lock it sets the cursor to 0 and then cuts the
// file to nothing. An append waits for the I/O lock, so it lands either
// before (and the cursor does not reach the end, so nothing is cut) or
// after (into the emptied file). A crash between the two steps leaves the
// cursor at 0 and the old lines in place, which are then shown again rather
// than lost. A reader of another version that finds its cursor beyond the
// end of the file starts again at 0, as the format always allowed. So the
// file holds only what has not been shown yet, however long the session
// runs.
//
// # Links
//
// Every inbox file, the lock files included, is opened without following a
// symbolic link in its last element: O_NOFOLLOW where the system has it,
// and on other systems a check of the path before opening and of the opened
// file after (see [ErrSymlink]).
package inbox

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/interlink-go/interlink/internal/paths"
	"github.com/interlink-go/interlink/internal/statefile"
)

// Batch bounds: a read returns at most MaxBatchLines records, and stops
// adding records once MaxBatchBytes have been read (checked before each
// record, so one long record can exceed it).
const (
	MaxBatchLines = 64
	MaxBatchBytes = 256 << 10
)

// ErrCorruptCursor means the cursor file does not hold a decimal offset.
var ErrCorruptCursor = errors.New("inbox: corrupt cursor file")

// Inbox is the notice inbox of one session. Its methods may be used from
// several goroutines and processes at once.
type Inbox struct {
	path   string
	cursor string
	lock   string
	ioLock string
}

// Open returns the inbox of session under stateRoot. The session id becomes
// a file name, so it must pass route.ValidateSession. Nothing is created.
func Open(stateRoot, session string) (*Inbox, error) {
	base, err := paths.SessionPath(stateRoot, paths.Inbox, session)
	if err != nil {
		return nil, fmt.Errorf("inbox: %w", err)
	}
	return &Inbox{path: base + ".jsonl", cursor: base + ".cursor", lock: base + ".lock", ioLock: base + ".io-lock"}, nil
}

// Path returns the path of the records file.
func (b *Inbox) Path() string { return b.path }

// CursorPath returns the path of the cursor file.
func (b *Inbox) CursorPath() string { return b.cursor }

// Create makes the inbox folder and an empty records file if they are
// missing. It never truncates an existing file or cursor.
func (b *Inbox) Create() error {
	if err := os.MkdirAll(filepath.Dir(b.path), 0o700); err != nil {
		return fmt.Errorf("inbox: %w", err)
	}
	f, err := openFile(b.path, os.O_WRONLY|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("inbox: %w", err)
	}
	return f.Close()
}

// Append adds one record, a single line of JSON without its newline. Under
// the I/O lock it cuts off a torn tail, writes the line and its newline, and
// syncs the file before returning.
func (b *Inbox) Append(line []byte) error {
	if strings.ContainsAny(string(line), "\n\r") {
		return errors.New("inbox: a record must be one line")
	}
	unlock, err := lockFile(b.ioLock)
	if err != nil {
		return err
	}
	defer unlock()
	f, err := openFile(b.path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("inbox: %w", err)
	}
	defer f.Close()
	end, err := completeEnd(f)
	if err != nil {
		return fmt.Errorf("inbox: %w", err)
	}
	if err := f.Truncate(end); err != nil {
		return fmt.Errorf("inbox: cut torn tail: %w", err)
	}
	buf := make([]byte, 0, len(line)+1)
	buf = append(append(buf, line...), '\n')
	if _, err := f.WriteAt(buf, end); err != nil {
		return fmt.Errorf("inbox: write: %w", err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("inbox: sync: %w", err)
	}
	return nil
}

// completeEnd returns the length of f up to and including its last newline.
func completeEnd(f *os.File) (int64, error) {
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	size := st.Size()
	buf := make([]byte, 4096)
	for pos := size; pos > 0; {
		n := min(int64(len(buf)), pos)
		pos -= n
		if _, err := f.ReadAt(buf[:n], pos); err != nil && !errors.Is(err, io.EOF) {
			return 0, err
		}
		for i := n - 1; i >= 0; i-- {
			if buf[i] == '\n' {
				return pos + i + 1, nil
			}
		}
	}
	return 0, nil
}

// Batch is what one read returned: complete records from the cursor on, and
// the offset just past them, which [Inbox.Commit] stores once they have been
// shown.
type Batch struct {
	Lines []string
	End   int64
}

// Read returns the next batch of complete records after the cursor, at most
// [MaxBatchLines] of them and stopping once [MaxBatchBytes] have been read. A
// last line without its newline is left for later. A cursor beyond the end
// of the file (the file was replaced) starts again at 0. An unreadable
// cursor is an error wrapping [ErrCorruptCursor].
func (b *Inbox) Read() (Batch, error) {
	unlock, err := lockFile(b.ioLock)
	if err != nil {
		return Batch{}, err
	}
	defer unlock()
	start, err := b.readCursor()
	if err != nil {
		return Batch{}, err
	}
	f, err := openFile(b.path, os.O_RDONLY, 0)
	if errors.Is(err, os.ErrNotExist) {
		return Batch{End: start}, nil
	}
	if err != nil {
		return Batch{}, fmt.Errorf("inbox: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return Batch{}, fmt.Errorf("inbox: %w", err)
	}
	if start > st.Size() {
		start = 0
	}
	if _, err := f.Seek(start, io.SeekStart); err != nil {
		return Batch{}, fmt.Errorf("inbox: %w", err)
	}
	r := bufio.NewReader(f)
	batch := Batch{End: start}
	var read int64
	for len(batch.Lines) < MaxBatchLines && read < MaxBatchBytes {
		line, err := r.ReadString('\n')
		if err != nil {
			if errors.Is(err, io.EOF) {
				break // a torn or absent last line stays
			}
			return Batch{}, fmt.Errorf("inbox: read: %w", err)
		}
		read += int64(len(line))
		batch.End += int64(len(line))
		batch.Lines = append(batch.Lines, strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r"))
	}
	return batch, nil
}

func (b *Inbox) readCursor() (int64, error) {
	data, ok, err := readFile(b.cursor)
	if err != nil {
		return 0, fmt.Errorf("inbox: %w", err)
	}
	if !ok {
		return 0, nil
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%w: %s", ErrCorruptCursor, b.cursor)
	}
	return n, nil
}

// Commit stores end, from a [Batch], as the new cursor, atomically. When
// end is the end of the last complete line, every line has been shown and
// Commit compacts the file: see the package documentation.
func (b *Inbox) Commit(end int64) error {
	unlock, err := lockFile(b.ioLock)
	if err != nil {
		return err
	}
	defer unlock()
	f, err := openFile(b.path, os.O_RDWR, 0)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("inbox: %w", err)
	}
	var complete int64 = -1
	if f != nil {
		defer f.Close()
		if complete, err = completeEnd(f); err != nil {
			return fmt.Errorf("inbox: %w", err)
		}
	}
	if end != complete || end == 0 {
		if err := statefile.WriteAtomic(b.cursor, []byte(strconv.FormatInt(end, 10))); err != nil {
			return fmt.Errorf("inbox: commit cursor: %w", err)
		}
		return nil
	}
	// Everything was shown. The cursor goes back first: a crash before the
	// cut then shows the old lines again instead of skipping new ones.
	if err := statefile.WriteAtomic(b.cursor, []byte("0")); err != nil {
		return fmt.Errorf("inbox: commit cursor: %w", err)
	}
	if err := f.Truncate(0); err != nil {
		return fmt.Errorf("inbox: compact: %w", err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("inbox: compact: %w", err)
	}
	return nil
}

// Listen takes the session's listener lock without waiting. It reports
// false when another listener holds it. release gives the lock back.
func (b *Inbox) Listen() (release func(), ok bool, err error) {
	l, err := newLock(b.lock)
	if err != nil {
		return nil, false, wrap("listener lock", b.lock, err)
	}
	got, err := l.TryLock()
	if err = linkError(b.lock, err); err != nil {
		return nil, false, wrap("listener lock", b.lock, err)
	}
	if !got {
		return nil, false, nil
	}
	return func() { _ = l.Unlock() }, true, nil
}
