package agent

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/interlink-go/interlink/internal/delivery"
	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/mailbox"
	"github.com/interlink-go/interlink/internal/statefile"
	"github.com/interlink-go/interlink/internal/testutil"
)

// stoppingSink hands notices over, calling stop first when set: the
// process is stopped while the handoff runs. With fail, the handoff then
// fails with ctx's error, as a sink does that ctx cuts short.
type stoppingSink struct {
	stop func()
	fail bool
}

func (s *stoppingSink) Notice(ctx context.Context, _, _ string) (mailbox.State, error) {
	if s.stop != nil {
		s.stop()
	}
	if s.fail {
		return "", ctx.Err()
	}
	return mailbox.StateInboxQueued, nil
}

func (s *stoppingSink) Text(context.Context, delivery.Record) error { return nil }

// A notifier that the process stops in the middle of its work, while it
// waits for the mailbox's lock, while it hands a notice to the host, or
// while it records the outcome, logs no warning: nothing failed but the
// stop itself. The same failures while running are warnings.
func TestNotifierStoppedMidWayLogsNoWarning(t *testing.T) {
	for _, stage := range []string{"waiting for the lock", "handing over", "recording"} {
		t.Run(stage, func(t *testing.T) {
			root := t.TempDir()
			me, alice := testutil.NumberedSigner(t, 1), testutil.NumberedSigner(t, 2)
			mb, err := mailbox.Open(root, me.Public(), "s1", nil)
			if err != nil {
				t.Fatal(err)
			}
			msg := identity.Message{To: me.Public().String(), Text: "hello", TS: identity.Millis(time.Now()), MsgID: "m1"}
			if err := alice.SignMessage(&msg); err != nil {
				t.Fatal(err)
			}
			if added, err := mb.Retain(t.Context(), msg, "alice"); err != nil || !added {
				t.Fatalf("Retain = %v, %v", added, err)
			}
			ctx, stop := context.WithCancel(t.Context())
			defer stop()
			sink := &stoppingSink{}
			switch stage {
			case "waiting for the lock":
				// Another goroutine of the process holds the mailbox.
				unlock, err := statefile.Lock(statefile.LockPath(mb.Path(), "lock"))
				if err != nil {
					t.Fatal(err)
				}
				defer unlock()
				stop()
			case "handing over":
				sink.stop, sink.fail = stop, true
			case "recording":
				sink.stop = func() {
					stop()
					// Another goroutine holds the mailbox while the outcome
					// would be recorded.
					unlock, err := statefile.Lock(statefile.LockPath(mb.Path(), "lock"))
					if err != nil {
						t.Error(err)
						return
					}
					t.Cleanup(func() { unlock() })
				}
			}
			var logs testutil.LockedBuffer
			n := &notifier{mailbox: mb, sink: sink, every: time.Second, retry: time.Millisecond,
				log: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}
			n.once(ctx)
			if strings.Contains(logs.String(), "level=WARN") {
				t.Errorf("a stopped notifier warned:\n%s", logs.String())
			}
		})
	}
}

// A handoff that fails while the process runs is a warning, and the
// notice's messages are recorded as delivery_failed.
func TestNotifierWarnsOfAFailedHandoffWhileRunning(t *testing.T) {
	root := t.TempDir()
	me, alice := testutil.NumberedSigner(t, 1), testutil.NumberedSigner(t, 2)
	mb, err := mailbox.Open(root, me.Public(), "s1", nil)
	if err != nil {
		t.Fatal(err)
	}
	msg := identity.Message{To: me.Public().String(), Text: "hello", TS: identity.Millis(time.Now()), MsgID: "m1"}
	if err := alice.SignMessage(&msg); err != nil {
		t.Fatal(err)
	}
	if _, err := mb.Retain(t.Context(), msg, "alice"); err != nil {
		t.Fatal(err)
	}
	var logs testutil.LockedBuffer
	n := &notifier{mailbox: mb, sink: failingSink{}, every: time.Second, retry: time.Millisecond,
		log: slog.New(slog.NewTextHandler(&logs, nil))}
	n.once(t.Context())
	if !strings.Contains(logs.String(), `level=WARN msg="notice not delivered"`) {
		t.Errorf("no warning for a failed handoff:\n%s", logs.String())
	}
	recs, err := mb.Records()
	if err != nil || len(recs) != 1 || recs[0].State != mailbox.StateDeliveryFailed {
		t.Errorf("records %+v, %v; want the message delivery_failed", recs, err)
	}
}

// failingSink fails every handoff.
type failingSink struct{}

func (failingSink) Notice(context.Context, string, string) (mailbox.State, error) {
	return "", context.DeadlineExceeded
}

func (failingSink) Text(context.Context, delivery.Record) error { return nil }
