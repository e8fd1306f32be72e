package natstest

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// recordingTB is a test whose log lines are also kept, and announced on
// logged, for tests that look at what was logged.
type recordingTB struct {
	testing.TB

	mu     sync.Mutex
	lines  []string // guarded by mu
	logged chan struct{}
}

func newRecordingTB(tb testing.TB) *recordingTB {
	return &recordingTB{TB: tb, logged: make(chan struct{}, 1)}
}

func (r *recordingTB) Logf(format string, v ...any) {
	r.TB.Logf(format, v...)
	r.mu.Lock()
	r.lines = append(r.lines, fmt.Sprintf(format, v...))
	r.mu.Unlock()
	select {
	case r.logged <- struct{}{}:
	default:
	}
}

// find returns the first recorded line that contains all of parts.
func (r *recordingTB) find(parts ...string) (string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
next:
	for _, l := range r.lines {
		for _, p := range parts {
			if !strings.Contains(l, p) {
				continue next
			}
		}
		return l, true
	}
	return "", false
}

func TestServerErrorsReachTheTestLog(t *testing.T) {
	t.Parallel()
	rec := newRecordingTB(t)
	srv := Start(rec, &Options{User: "u", Password: "right"})
	if nc, err := nats.Connect(srv.UserURL("u", "wrong"), nats.MaxReconnects(0)); err == nil {
		nc.Close()
		t.Fatal("a wrong password was accepted")
	}
	// The server logs the refusal as it closes the connection, which may
	// come after the client has given up.
	deadline := time.After(readyTimeout)
	for {
		if _, ok := rec.find("nats-server natstest: error", "authentication error"); ok {
			return
		}
		select {
		case <-rec.logged:
		case <-deadline:
			rec.mu.Lock()
			defer rec.mu.Unlock()
			t.Fatalf("no authentication error in the test log within %v; it has %q", readyTimeout, rec.lines)
		}
	}
}

func TestServerNoticesStayOutOfTheTestLog(t *testing.T) {
	rec := newRecordingTB(t)
	l := newTestLog(rec, "natstest")
	l.Noticef("starting %s", "up")
	l.Debugf("detail %s", "x")
	l.Tracef("wire %s", "y")
	l.Warnf("slow %s", "disk")
	if len(rec.lines) != 1 {
		t.Fatalf("logged %q, want only the warning", rec.lines)
	}
	if got := rec.lines[0]; !strings.Contains(got, "warning") || !strings.Contains(got, "disk") {
		t.Errorf("logged %q, want the warning with its text", got)
	}
}

func TestServerLogIsQuietOnceTheTestHasEnded(t *testing.T) {
	var (
		rec *recordingTB
		l   *testLog
	)
	t.Run("server", func(t *testing.T) {
		rec = newRecordingTB(t)
		l = newTestLog(rec, "natstest")
	})
	// Logging to an ended test can panic; the log drops the line instead.
	l.Errorf("late %s", "line")
	if len(rec.lines) != 0 {
		t.Errorf("logged %q after the test ended", rec.lines)
	}
}
