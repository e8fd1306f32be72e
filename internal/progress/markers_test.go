package progress_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/progress"
	"github.com/interlink-go/interlink/internal/route"
	"github.com/interlink-go/interlink/internal/statefile"
)

func TestOpen(t *testing.T) {
	root := t.TempDir()
	for _, sid := range []string{"", ".", "..", "../x", "a/b", `a\b`, "a:b", "a\nb", "a\x00b", strings.Repeat("s", route.MaxSessionLen+1)} {
		if _, err := progress.Open(root, sid, nil); !errors.Is(err, route.ErrInvalidSession) {
			t.Errorf("Open(%q) error = %v, want %v", sid, err, route.ErrInvalidSession)
		}
	}
	if _, err := progress.Open("", session, nil); err == nil {
		t.Error("Open with an empty state root succeeded")
	}

	m, err := progress.Open(root, session, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "task")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Open created files: stat task folder: %v", err)
	}
	if _, ok, err := m.Current(); ok || err != nil {
		t.Errorf("Current on a fresh folder = %v, %v; want false, nil", ok, err)
	}
}

// state is what a session's task folder holds as far as Markers is
// concerned: the marker and last-update, "" meaning missing.
type state struct {
	Marker     string
	LastUpdate string
}

// readState returns the marker (decoded and re-encoded, so key order and
// spacing do not matter) and last-update of session under root.
func readState(tb testing.TB, root string) state {
	tb.Helper()
	var st state
	if data, ok := readTaskFile(tb, root, "current-task.json"); ok {
		var v map[string]any
		if err := json.Unmarshal([]byte(data), &v); err != nil {
			tb.Fatalf("marker %q: %v", data, err)
		}
		out, err := json.Marshal(v)
		if err != nil {
			tb.Fatal(err)
		}
		st.Marker = string(out)
	}
	st.LastUpdate, _ = readTaskFile(tb, root, "last-update")
	return st
}

// canon returns a marker in the form readState gives.
func canon(id, peer string, since time.Time) string {
	var v map[string]any
	if err := json.Unmarshal([]byte(markerJSON(id, peer, since)), &v); err != nil {
		panic(err)
	}
	out, _ := json.Marshal(v)
	return string(out)
}

func TestRules(t *testing.T) {
	earlier := baseTime.Add(-10 * time.Minute)
	old := state{Marker: canon("t-1", "alice", earlier), LastUpdate: ms(earlier)}
	touched := state{Marker: old.Marker, LastUpdate: ms(baseTime)}
	cleared := state{LastUpdate: ms(earlier)}
	clearedTouched := state{LastUpdate: ms(baseTime)}

	tests := []struct {
		name   string
		before state
		apply  func(*progress.Markers) error
		want   state
	}{
		{
			name:  "opening request writes marker and last-update",
			apply: func(m *progress.Markers) error { return m.Inbound("t-1", "", "alice") },
			want:  state{Marker: canon("t-1", "alice", baseTime), LastUpdate: ms(baseTime)},
		},
		{
			name:   "opening request replaces another task",
			before: old,
			apply:  func(m *progress.Markers) error { return m.Inbound("t-2", "", "bob") },
			want:   state{Marker: canon("t-2", "bob", baseTime), LastUpdate: ms(baseTime)},
		},
		{
			name:  "inbound without task id changes nothing",
			apply: func(m *progress.Markers) error { return m.Inbound("", "", "alice") },
		},
		{
			name:  "inbound update does not open a task",
			apply: func(m *progress.Markers) error { return m.Inbound("t-1", identity.StatusUpdate, "alice") },
		},
		{
			name:   "inbound update leaves the marker alone",
			before: old,
			apply:  func(m *progress.Markers) error { return m.Inbound("t-1", identity.StatusUpdate, "alice") },
			want:   old,
		},
		{
			name:   "inbound result leaves the marker alone",
			before: old,
			apply:  func(m *progress.Markers) error { return m.Inbound("t-1", identity.StatusResult, "alice") },
			want:   old,
		},
		{
			name:  "inbound needs_input does not open a task",
			apply: func(m *progress.Markers) error { return m.Inbound("t-1", identity.StatusNeedsInput, "alice") },
		},
		{
			name:   "inbound cancel clears the matching marker",
			before: old,
			apply:  func(m *progress.Markers) error { return m.Inbound("t-1", identity.StatusCanceled, "alice") },
			want:   cleared,
		},
		{
			name:   "inbound cancel keeps another task",
			before: old,
			apply:  func(m *progress.Markers) error { return m.Inbound("t-2", identity.StatusCanceled, "alice") },
			want:   old,
		},
		{
			name:   "inbound cancel matches the id exactly",
			before: old,
			apply:  func(m *progress.Markers) error { return m.Inbound(" t-1", identity.StatusCanceled, "alice") },
			want:   old,
		},
		{
			name:  "inbound cancel without a marker",
			apply: func(m *progress.Markers) error { return m.Inbound("t-1", identity.StatusCanceled, "alice") },
		},
		{
			name:   "outbound update touches last-update",
			before: old,
			apply:  func(m *progress.Markers) error { return m.Outbound("t-1", identity.StatusUpdate) },
			want:   touched,
		},
		{
			name:  "outbound update without a marker",
			apply: func(m *progress.Markers) error { return m.Outbound("t-1", identity.StatusUpdate) },
			want:  state{LastUpdate: ms(baseTime)},
		},
		{
			name:   "outbound result clears the matching marker",
			before: old,
			apply:  func(m *progress.Markers) error { return m.Outbound("t-1", identity.StatusResult) },
			want:   clearedTouched,
		},
		{
			name:   "outbound failed clears the matching marker",
			before: old,
			apply:  func(m *progress.Markers) error { return m.Outbound("t-1", identity.StatusFailed) },
			want:   clearedTouched,
		},
		{
			name:   "outbound canceled clears the matching marker",
			before: old,
			apply:  func(m *progress.Markers) error { return m.Outbound("t-1", identity.StatusCanceled) },
			want:   clearedTouched,
		},
		{
			name:   "outbound result keeps another task",
			before: old,
			apply:  func(m *progress.Markers) error { return m.Outbound("t-2", identity.StatusResult) },
			want:   touched,
		},
		{
			name:   "outbound result without task id keeps the marker",
			before: old,
			apply:  func(m *progress.Markers) error { return m.Outbound("", identity.StatusResult) },
			want:   touched,
		},
		{
			name:   "outbound needs_input changes nothing",
			before: old,
			apply:  func(m *progress.Markers) error { return m.Outbound("t-1", identity.StatusNeedsInput) },
			want:   old,
		},
		{
			name:   "outbound without status changes nothing",
			before: old,
			apply:  func(m *progress.Markers) error { return m.Outbound("t-1", "") },
			want:   old,
		},
		{
			name:   "cancel_task clears the matching marker",
			before: old,
			apply:  func(m *progress.Markers) error { return m.Canceled("t-1") },
			want:   cleared,
		},
		{
			name:   "cancel_task keeps another task",
			before: old,
			apply:  func(m *progress.Markers) error { return m.Canceled("t-2") },
			want:   old,
		},
		{
			name:   "cancel_task without task id",
			before: old,
			apply:  func(m *progress.Markers) error { return m.Canceled("") },
			want:   old,
		},
		{
			name:  "cancel_task without a marker",
			apply: func(m *progress.Markers) error { return m.Canceled("t-1") },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			if tt.before.Marker != "" {
				writeTaskFile(t, root, "current-task.json", tt.before.Marker)
			}
			if tt.before.LastUpdate != "" {
				writeTaskFile(t, root, "last-update", tt.before.LastUpdate)
			}
			now := baseTime
			if err := tt.apply(openMarkers(t, root, &now)); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, readState(t, root)); diff != "" {
				t.Errorf("task folder (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFileFormat(t *testing.T) {
	root := t.TempDir()
	now := baseTime
	m := openMarkers(t, root, &now)
	if err := m.Inbound("t-1", "", "alice"); err != nil {
		t.Fatal(err)
	}

	data, _ := readTaskFile(t, root, "current-task.json")
	var got map[string]any
	if err := json.Unmarshal([]byte(data), &got); err != nil {
		t.Fatalf("marker %q: %v", data, err)
	}
	want := map[string]any{"task_id": "t-1", "peer": "alice", "since": float64(baseTime.UnixMilli())}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("marker (-want +got):\n%s", diff)
	}
	if got, _ := readTaskFile(t, root, "last-update"); got != "1700000000000" {
		t.Errorf("last-update = %q, want %q", got, "1700000000000")
	}
	for _, name := range []string{"current-task.json", "last-update"} {
		fi, err := os.Stat(filepath.Join(taskDir(root), name))
		if err != nil {
			t.Fatal(err)
		}
		if perm := fi.Mode().Perm(); perm&0o077 != 0 {
			t.Errorf("%s mode = %v, want no access for group or others", name, perm)
		}
	}

	task, ok, err := m.Current()
	if err != nil || !ok {
		t.Fatalf("Current = %v, %v", ok, err)
	}
	if diff := cmp.Diff(progress.Task{ID: "t-1", Peer: "alice", Since: baseTime}, task); diff != "" {
		t.Errorf("Current (-want +got):\n%s", diff)
	}
}

// A marker written by another implementation may be spaced differently and
// carry fields this one does not know.
func TestCurrentForeignMarker(t *testing.T) {
	root := t.TempDir()
	writeTaskFile(t, root, "current-task.json", "\n{ \"since\": 1700000000000,\n  \"peer\": \"alice\", \"task_id\": \"t-1\", \"extra\": [1] }\n")
	now := baseTime
	task, ok, err := openMarkers(t, root, &now).Current()
	if err != nil || !ok {
		t.Fatalf("Current = %v, %v", ok, err)
	}
	if diff := cmp.Diff(progress.Task{ID: "t-1", Peer: "alice", Since: baseTime}, task); diff != "" {
		t.Errorf("Current (-want +got):\n%s", diff)
	}
}

// corruptMarkers are marker files that cannot be read as a task.
var corruptMarkers = map[string]string{
	"empty":          "",
	"not json":       "t-1",
	"truncated":      `{"task_id":"t-1"`,
	"array":          `["t-1"]`,
	"null":           "null",
	"string":         `"t-1"`,
	"no task id":     `{"peer":"alice","since":1}`,
	"empty task id":  `{"task_id":"","peer":"alice"}`,
	"numeric id":     `{"task_id":1}`,
	"fractional ms":  `{"task_id":"t-1","since":1.5}`,
	"over the limit": `{"task_id":"t-1","peer":"` + strings.Repeat("a", 1<<20) + `"}`,
}

func TestCorruptMarker(t *testing.T) {
	for name, content := range corruptMarkers {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			writeTaskFile(t, root, "current-task.json", content)
			now := baseTime
			m := openMarkers(t, root, &now)

			if _, ok, err := m.Current(); ok || !errors.Is(err, progress.ErrCorrupt) {
				t.Errorf("Current = %v, %v; want false, %v", ok, err, progress.ErrCorrupt)
			}
			// A rule that cannot tell which task the marker names leaves
			// it in place.
			if err := m.Canceled("t-1"); !errors.Is(err, progress.ErrCorrupt) {
				t.Errorf("Canceled error = %v, want %v", err, progress.ErrCorrupt)
			}
			if err := m.Outbound("t-1", identity.StatusResult); !errors.Is(err, progress.ErrCorrupt) {
				t.Errorf("Outbound error = %v, want %v", err, progress.ErrCorrupt)
			}
			if got, _ := readTaskFile(t, root, "current-task.json"); got != content {
				t.Error("a corrupt marker was changed by a rule that removes a named task")
			}
			// An opening request replaces it.
			if err := m.Inbound("t-2", "", "bob"); err != nil {
				t.Fatal(err)
			}
			if task, ok, err := m.Current(); err != nil || !ok || task.ID != "t-2" {
				t.Errorf("Current after opening = %+v, %v, %v; want task t-2", task, ok, err)
			}
		})
	}
}

func TestReadError(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(taskDir(root), "current-task.json"), 0o700); err != nil {
		t.Fatal(err)
	}
	now := baseTime
	m := openMarkers(t, root, &now)
	if _, _, err := m.Current(); err == nil || errors.Is(err, progress.ErrCorrupt) {
		t.Errorf("Current on a folder: error = %v, want a read error", err)
	}
	if err := m.Canceled("t-1"); err == nil {
		t.Error("Canceled on a folder succeeded")
	}
}

// Writers in several goroutines and several Markers values share the
// folder; under -race this checks the locking, and afterwards the folder
// must still be readable.
func TestConcurrent(t *testing.T) {
	root := t.TempDir()
	var wg sync.WaitGroup
	for i := range 8 {
		now := baseTime.Add(time.Duration(i) * time.Second)
		m := openMarkers(t, root, &now)
		id := []string{"t-1", "t-2"}[i%2]
		wg.Go(func() {
			for range 20 {
				for _, err := range []error{
					m.Inbound(id, "", "alice"),
					m.Outbound(id, identity.StatusUpdate),
					m.Canceled("t-1"),
					m.Outbound("t-2", identity.StatusResult),
				} {
					if err != nil {
						t.Error(err)
					}
				}
			}
		})
	}
	wg.Wait()
	now := baseTime
	if _, _, err := openMarkers(t, root, &now).Current(); err != nil {
		t.Error(err)
	}
}

// blockFile puts a non-empty folder where a file of the task folder
// belongs, so that it can be neither replaced nor locked.
func blockFile(tb testing.TB, root, name string) {
	tb.Helper()
	dir := filepath.Join(taskDir(root), name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "f"), nil, 0o600); err != nil {
		tb.Fatal(err)
	}
}

func TestWriteErrors(t *testing.T) {
	t.Run("last-update", func(t *testing.T) {
		root := t.TempDir()
		blockFile(t, root, "last-update")
		now := baseTime
		m := openMarkers(t, root, &now)
		if err := m.Inbound("t-1", "", "alice"); err == nil {
			t.Error("Inbound succeeded without writing last-update")
		}
		if _, ok := readTaskFile(t, root, "current-task.json"); ok {
			t.Error("marker written although last-update could not be")
		}
		if err := m.Outbound("t-1", identity.StatusUpdate); err == nil {
			t.Error("Outbound succeeded without writing last-update")
		}
	})
	t.Run("lock", func(t *testing.T) {
		root := t.TempDir()
		blockFile(t, root, "current-task.lock")
		writeTaskFile(t, root, "current-task.json", markerJSON("t-1", "alice", baseTime))
		now := baseTime
		m := openMarkers(t, root, &now)
		if err := m.Inbound("t-2", "", "bob"); !errors.Is(err, statefile.ErrLock) {
			t.Errorf("Inbound error = %v, want %v", err, statefile.ErrLock)
		}
		if err := m.Canceled("t-1"); !errors.Is(err, statefile.ErrLock) {
			t.Errorf("Canceled error = %v, want %v", err, statefile.ErrLock)
		}
		if task, ok, err := m.Current(); err != nil || !ok || task.ID != "t-1" {
			t.Errorf("Current = %+v, %v, %v; want task t-1 unchanged", task, ok, err)
		}
	})
}
