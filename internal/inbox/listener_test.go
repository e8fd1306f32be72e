package inbox

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/interlink-go/interlink/internal/budget"
)

// stay is a host that never goes away.
var stay = &ListenerOptions{HostGone: func() bool { return false }}

// failWriter fails every write.
type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("stderr closed") }

// The listener shows the waiting records behind the wake line, then moves
// the cursor past them: the next listener does not show them again.
func TestListenerShowsRecordsThenCommitsThem(t *testing.T) {
	b := newInbox(t)
	appendLines(t, b, `{"sender":"Interlink","content":"one"}`, `{"sender":"Interlink","content":"two"}`)
	var out bytes.Buffer
	woke, err := b.RunListener(t.Context(), &out, stay)
	if err != nil || !woke {
		t.Fatalf("RunListener = %v, %v; want woke", woke, err)
	}
	got := out.String()
	if !strings.HasPrefix(got, budget.WakeLine+"\n") || !strings.Contains(got, "one") || !strings.Contains(got, "two") || !strings.HasSuffix(got, "\n") {
		t.Errorf("shown:\n%s", got)
	}
	if batch, err := b.Read(); err != nil || len(batch.Lines) != 0 {
		t.Errorf("after the listener, Read = %d lines, %v; want none", len(batch.Lines), err)
	}
}

// Without a record for its renewal time, the listener shows the renewal
// notice, behind the wake line, and wakes the session all the same.
func TestListenerAsksForARenewalWhenNothingCame(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newInbox(t)
		var out bytes.Buffer
		start := time.Now()
		woke, err := b.RunListener(t.Context(), &out, &ListenerOptions{RenewAfter: time.Minute, HostGone: stay.HostGone})
		if err != nil || !woke {
			t.Fatalf("RunListener = %v, %v; want woke", woke, err)
		}
		if waited := time.Since(start); waited != time.Minute {
			t.Errorf("renewed after %v, want 1m", waited)
		}
		if want := budget.MarkWake(RenewalText) + "\n"; out.String() != want {
			t.Errorf("shown %q, want %q", out.String(), want)
		}
	})
}

// While another listener serves the session, a second one steps aside at
// once: it shows and consumes nothing.
func TestListenerStepsAsideForAnotherListener(t *testing.T) {
	b := newInbox(t)
	appendLines(t, b, `{"content":"waiting"}`)
	release, ok, err := b.Listen()
	if err != nil || !ok {
		t.Fatalf("Listen = %v, %v", ok, err)
	}
	defer release()
	var out bytes.Buffer
	if woke, err := b.RunListener(t.Context(), &out, stay); woke || err != nil || out.Len() != 0 {
		t.Errorf("second listener = %v, %v, shown %q; want nothing", woke, err, out.String())
	}
	if batch, _ := b.Read(); len(batch.Lines) != 1 {
		t.Errorf("the record was consumed")
	}
}

// When its host goes away, the listener ends quietly and leaves what comes
// later to the next listener.
func TestListenerEndsQuietlyWhenItsHostGoes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newInbox(t)
		asked := 0
		opts := &ListenerOptions{Poll: time.Second, HostGone: func() bool { asked++; return asked > 2 }}
		var out bytes.Buffer
		woke, err := b.RunListener(t.Context(), &out, opts)
		if woke || err != nil || out.Len() != 0 {
			t.Fatalf("RunListener = %v, %v, shown %q; want a quiet end", woke, err, out.String())
		}
		// The lock is free again for the next listener.
		release, ok, err := b.Listen()
		if err != nil || !ok {
			t.Fatalf("Listen after the host left = %v, %v", ok, err)
		}
		release()
	})
}

// When the listener cannot write, it consumes nothing and says so, for
// both what it can show: records and the renewal.
func TestListenerConsumesNothingItCouldNotShow(t *testing.T) {
	b := newInbox(t)
	appendLines(t, b, `{"content":"kept"}`)
	if woke, err := b.RunListener(t.Context(), failWriter{}, stay); woke || !errors.Is(err, ErrNotShown) {
		t.Errorf("RunListener = %v, %v; want ErrNotShown", woke, err)
	}
	if batch, _ := b.Read(); len(batch.Lines) != 1 {
		t.Errorf("a record that was not shown was consumed")
	}
	synctest.Test(t, func(t *testing.T) {
		empty := newInbox(t)
		opts := &ListenerOptions{RenewAfter: time.Second, HostGone: stay.HostGone}
		if woke, err := empty.RunListener(t.Context(), failWriter{}, opts); woke || !errors.Is(err, ErrNotShown) {
			t.Errorf("renewal: RunListener = %v, %v; want ErrNotShown", woke, err)
		}
	})
}
