package progress_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/interlink-go/interlink/internal/progress"
)

// baseTime is the fixed "now" of the tests.
var baseTime = time.UnixMilli(1_700_000_000_000)

// session is the session id the tests use.
const session = "s1"

// ms returns t as the decimal Unix milliseconds the stamp files hold.
func ms(t time.Time) string { return strconv.FormatInt(t.UnixMilli(), 10) }

// taskDir returns the task folder of session under root, spelled out as
// the file contract gives it.
func taskDir(root string) string { return filepath.Join(root, "task", session) }

// openMarkers opens the markers of session under root with a clock fixed at
// *now, so a test can move time by assigning to it.
func openMarkers(tb testing.TB, root string, now *time.Time) *progress.Markers {
	tb.Helper()
	m, err := progress.Open(root, session, &progress.Options{Now: func() time.Time { return *now }})
	if err != nil {
		tb.Fatal(err)
	}
	return m
}

// writeTaskFile writes one file of the task folder of session.
func writeTaskFile(tb testing.TB, root, name, content string) {
	tb.Helper()
	dir := taskDir(root)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
		tb.Fatal(err)
	}
}

// readTaskFile returns one file of the task folder of session, and false
// when it does not exist.
func readTaskFile(tb testing.TB, root, name string) (string, bool) {
	tb.Helper()
	data, err := os.ReadFile(filepath.Join(taskDir(root), name))
	if errors.Is(err, fs.ErrNotExist) {
		return "", false
	}
	if err != nil {
		tb.Fatal(err)
	}
	return string(data), true
}

// markerJSON returns a marker as the server writes it.
func markerJSON(id, peer string, since time.Time) string {
	return `{"task_id":` + strconv.Quote(id) + `,"peer":` + strconv.Quote(peer) + `,"since":` + ms(since) + `}`
}
