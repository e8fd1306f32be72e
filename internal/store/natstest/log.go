package natstest

import (
	"fmt"
	"sync"
	"testing"
)

// testLog passes a server's warnings and errors to the test's log, so that
// a test failing on a server-side refusal shows the server's own reason
// (go test prints the log of failing tests only). Notices, debug and trace
// lines are left out. It stops passing lines on once the test's cleanup
// has shut the server down: logging after a test has ended can panic.
type testLog struct {
	tb   testing.TB
	name string

	mu      sync.Mutex
	stopped bool // guarded by mu
}

// newTestLog returns the log of the server called name. It stops with the
// test's cleanups; register it before the cleanup that shuts the server
// down, so that it stops after it.
func newTestLog(tb testing.TB, name string) *testLog {
	l := &testLog{tb: tb, name: name}
	tb.Cleanup(func() {
		l.mu.Lock()
		l.stopped = true
		l.mu.Unlock()
	})
	return l
}

func (l *testLog) line(level, format string, v []any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stopped {
		return
	}
	l.tb.Logf("nats-server %s: %s: %s", l.name, level, fmt.Sprintf(format, v...))
}

func (l *testLog) Warnf(format string, v ...any)  { l.line("warning", format, v) }
func (l *testLog) Errorf(format string, v ...any) { l.line("error", format, v) }
func (l *testLog) Fatalf(format string, v ...any) { l.line("fatal", format, v) }
func (l *testLog) Noticef(string, ...any)         {}
func (l *testLog) Debugf(string, ...any)          {}
func (l *testLog) Tracef(string, ...any)          {}
