//go:build hosttest

package hosttest

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"
)

// httpRecord is the HTTP part of a request that a fake model recorded.
type httpRecord struct {
	Method string
	Path   string // with the query
	Header http.Header
	Body   []byte
}

// newHTTPRecord returns the record of req, whose body was body.
func newHTTPRecord(req *http.Request, body []byte) httpRecord {
	return httpRecord{Method: req.Method, Path: req.URL.RequestURI(), Header: req.Header.Clone(), Body: body}
}

// rule decides a fake model's answer A to a decoded request Q; ok is false
// when the rule does not apply.
type rule[Q, A any] func(r Q) (reply A, ok bool)

// firstReply returns the reply of the first of rules that applies to r,
// else otherwise.
func firstReply[Q, A any](rules []rule[Q, A], r Q, otherwise A) A {
	for _, rule := range rules {
		if reply, ok := rule(r); ok {
			return reply
		}
	}
	return otherwise
}

// recorder keeps the requests R that a fake model got, in order, so that a
// test can wait for one, and numbers the ids of the model's answers. Its
// zero value is ready to use.
type recorder[R any] struct {
	mu       sync.Mutex // guards requests, changed and serials
	requests []R
	// changed is closed and cleared when a request is recorded; it is
	// made when someone waits.
	changed chan struct{}
	serials int
}

// errClientExited is what [recorder.await] returns when the client's exit
// ended the wait.
var errClientExited = errors.New("before the client exited")

// record adds r and wakes the waiters.
func (rc *recorder[R]) record(r R) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.requests = append(rc.requests, r)
	if rc.changed != nil {
		close(rc.changed)
		rc.changed = nil
	}
}

// snapshot returns the requests recorded so far and a channel closed on
// the next one.
func (rc *recorder[R]) snapshot() ([]R, <-chan struct{}) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.changed == nil {
		rc.changed = make(chan struct{})
	}
	return slices.Clone(rc.requests), rc.changed
}

// serial returns 1, then 2, and so on.
func (rc *recorder[R]) serial() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.serials++
	return rc.serials
}

// await waits up to timeout for a request for which match is true, and
// returns the first. done, when closed, ends the wait after one more look
// (for a request recorded at the exit): it is the channel of a process
// whose exit means no such request will come; nil means none. When no
// request matches, the error completes "no request ...": it is
// [errClientExited], or says "within" and the timeout.
func (rc *recorder[R]) await(timeout time.Duration, done <-chan struct{}, match func(R) bool) (R, error) {
	var zero R
	deadline := time.After(timeout)
	exited := false
	for {
		reqs, changed := rc.snapshot()
		for _, r := range reqs {
			if match(r) {
				return r, nil
			}
		}
		if exited {
			return zero, errClientExited
		}
		select {
		case <-changed:
		case <-done:
			exited = true
		case <-deadline:
			return zero, fmt.Errorf("within %v", timeout)
		}
	}
}

// hold wraps a rule so that the first time it applies, the fake model
// holds its answer: it closes the returned reached channel and waits until
// the test calls release (or at most max), so that the test can look at
// the world while the host waits for the model. Cleanup releases it.
func hold[Q, A any](t testing.TB, r rule[Q, A], max time.Duration) (held rule[Q, A], reached <-chan struct{}, release func()) {
	reach, free := make(chan struct{}), make(chan struct{})
	var reachOnce, freeOnce sync.Once
	release = func() { freeOnce.Do(func() { close(free) }) }
	t.Cleanup(release)
	held = func(q Q) (A, bool) {
		reply, ok := r(q)
		if !ok {
			return reply, false
		}
		reachOnce.Do(func() { close(reach) })
		select {
		case <-free:
		case <-time.After(max):
		}
		return reply, true
	}
	return held, reach, release
}

// await waits up to timeout for ch to close; it fails the test, naming
// what, when it does not.
func await(t testing.TB, ch <-chan struct{}, timeout time.Duration, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(timeout):
		t.Fatalf("no %s within %v", what, timeout)
	}
}
