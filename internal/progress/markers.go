package progress

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/paths"
	"github.com/interlink-go/interlink/internal/statefile"
)

// Names of the files in a session's task folder.
const (
	markerFile = "current-task.json"
	updateFile = "last-update"
	nudgeFile  = "last-nudge"
)

// Read limits. Our own files are far smaller; the limits only stop a
// damaged or planted file from being read into memory whole.
const (
	maxMarkerSize = 1 << 20
	maxStampSize  = 64
)

// Task is the task a session is working on, as its marker records it.
type Task struct {
	// ID is the task id exactly as the peer sent it.
	ID string
	// Peer is the local petname of the peer that asked for the task.
	Peer string
	// Since is when the opening request arrived, to the millisecond.
	Since time.Time
}

// taskJSON is the marker's form on disk.
type taskJSON struct {
	TaskID string `json:"task_id"`
	Peer   string `json:"peer"`
	Since  int64  `json:"since"`
}

// Options holds optional settings for [Open]. A nil *Options means
// defaults.
type Options struct {
	// Now returns the current time. Nil means [time.Now].
	Now func() time.Time
}

// Markers writes the progress files of one session. It holds only paths
// and the clock, and is safe for concurrent use: changes to the marker are
// serialized by the lock file, across goroutines and processes.
type Markers struct {
	marker string // current-task.json
	lock   string // current-task.lock, taken for every change to marker
	update string // last-update
	now    func() time.Time
}

// Open returns the markers of the given session under stateRoot, in the
// folder <stateRoot>/task/<session>. Nothing is created until the first
// change.
//
// The session id becomes a folder name, so it must pass
// [route.ValidateSession]; an id such as ".." or "a/b" is refused with an
// error wrapping [route.ErrInvalidSession].
func Open(stateRoot, session string, opts *Options) (*Markers, error) {
	dir, err := paths.SessionPath(stateRoot, paths.Task, session)
	if err != nil {
		return nil, fmt.Errorf("progress: open: %w", err)
	}
	now := time.Now
	if opts != nil && opts.Now != nil {
		now = opts.Now
	}
	marker := filepath.Join(dir, markerFile)
	return &Markers{
		marker: marker,
		lock:   statefile.LockPath(marker, "lock"),
		update: filepath.Join(dir, updateFile),
		now:    now,
	}, nil
}

// Inbound applies the rules for a message received from peer (its local
// petname). A message with a task id and no status opens that task: it
// becomes the marker, replacing any other, and the session counts as just
// updated. A cancellation names a task to forget: the marker is removed if
// it names taskID. Anything else, and any message without a task id,
// changes nothing.
func (m *Markers) Inbound(taskID string, status identity.Status, peer string) error {
	if taskID == "" {
		return nil
	}
	switch status {
	case "":
		now := m.now()
		// last-update goes first: a hook that ran between the two writes
		// would otherwise pair the new marker with the previous task's
		// last update and remind at once.
		if err := m.touch(now); err != nil {
			return err
		}
		return m.open(Task{ID: taskID, Peer: peer, Since: now})
	case identity.StatusCanceled:
		return m.clear(taskID)
	}
	return nil
}

// Outbound applies the rules for a message the session sends with
// send_message. An update or a final status (result, failed, canceled)
// records the time in last-update; a final status with a task id also
// removes the marker if it names that task. Other statuses change nothing.
func (m *Markers) Outbound(taskID string, status identity.Status) error {
	if status != identity.StatusUpdate && !status.Terminal() {
		return nil
	}
	if err := m.touch(m.now()); err != nil {
		return err
	}
	if status.Terminal() && taskID != "" {
		return m.clear(taskID)
	}
	return nil
}

// Canceled applies the rule for the cancel_task tool: the marker is removed
// if it names taskID.
func (m *Markers) Canceled(taskID string) error {
	if taskID == "" {
		return nil
	}
	return m.clear(taskID)
}

// Current returns the task the marker names, without taking the lock. It
// reports false when there is no marker, and an error wrapping
// [ErrCorrupt] when the marker cannot be read as a task.
func (m *Markers) Current() (Task, bool, error) {
	return readTask(m.marker)
}

// touch writes t to last-update.
func (m *Markers) touch(t time.Time) error {
	return writeStamp(m.update, t)
}

// open makes t the marker.
func (m *Markers) open(t Task) error {
	data, err := json.Marshal(taskJSON{TaskID: t.ID, Peer: t.Peer, Since: t.Since.UnixMilli()})
	if err != nil {
		return fmt.Errorf("progress: encode marker: %w", err)
	}
	return m.locked(func() error {
		if err := statefile.WriteAtomic(m.marker, data); err != nil {
			return fmt.Errorf("progress: %w", err)
		}
		return nil
	})
}

// clear removes the marker if it names taskID. The read and the removal
// happen under the lock, so a marker written meanwhile for another task is
// never removed. A corrupt marker is left in place and reported.
func (m *Markers) clear(taskID string) error {
	return m.locked(func() error {
		t, ok, err := readTask(m.marker)
		if err != nil || !ok || t.ID != taskID {
			return err
		}
		if err := os.Remove(m.marker); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("progress: %w", err)
		}
		return nil
	})
}

// locked runs fn with the marker's lock held and returns its error, or the
// error from releasing the lock if fn succeeded.
func (m *Markers) locked(fn func() error) error {
	return statefile.Locked(context.Background(), m.lock, fn)
}

// readTask reads and decodes the marker at path. A missing file gives
// (Task{}, false, nil).
func readTask(path string) (Task, bool, error) {
	data, ok, err := readLimited(path, maxMarkerSize)
	if err != nil || !ok {
		return Task{}, false, err
	}
	t, err := decodeTask(data)
	if err != nil {
		return Task{}, false, fmt.Errorf("%w: %s: %w", ErrCorrupt, path, err)
	}
	return t, true, nil
}

// decodeTask decodes a marker. It needs a JSON object with a non-empty
// string task_id; peer and since may be missing.
func decodeTask(data []byte) (Task, error) {
	if len(data) > maxMarkerSize {
		return Task{}, fmt.Errorf("larger than %d bytes", maxMarkerSize)
	}
	data = bytes.TrimSpace(data)
	if len(data) == 0 || data[0] != '{' {
		return Task{}, errors.New("not a JSON object")
	}
	var tj taskJSON
	if err := json.Unmarshal(data, &tj); err != nil {
		return Task{}, err
	}
	if tj.TaskID == "" {
		return Task{}, errors.New("no task_id")
	}
	return Task{ID: tj.TaskID, Peer: tj.Peer, Since: time.UnixMilli(tj.Since)}, nil
}

// writeStamp replaces the file at path with t as decimal Unix milliseconds.
func writeStamp(path string, t time.Time) error {
	if err := statefile.WriteAtomic(path, strconv.AppendInt(nil, t.UnixMilli(), 10)); err != nil {
		return fmt.Errorf("progress: %w", err)
	}
	return nil
}

// readStamp reads a timestamp file. It reports false when the file is
// missing or does not hold a decimal number (surrounding white space is
// allowed), so that a damaged file counts as long ago.
func readStamp(path string) (time.Time, bool, error) {
	data, ok, err := readLimited(path, maxStampSize)
	if err != nil || !ok {
		return time.Time{}, false, err
	}
	ms, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
	if err != nil {
		return time.Time{}, false, nil
	}
	return time.UnixMilli(ms), true, nil
}

// readLimited reads the file at path, or its first limit+1 bytes when it is
// longer, so that callers can tell an oversized file apart. A missing file
// gives (nil, false, nil).
func readLimited(path string, limit int64) ([]byte, bool, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("progress: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, false, fmt.Errorf("progress: read %s: %w", path, err)
	}
	return data, true, nil
}
