package testutil

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/interlink-go/interlink/internal/receipt"
)

func TestLockedBufferConcurrentWrites(t *testing.T) {
	var b LockedBuffer
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for range 100 {
				fmt.Fprintf(&b, "%d\n", i)
			}
		})
	}
	wg.Wait()
	if n := strings.Count(b.String(), "\n"); n != 800 {
		t.Fatalf("got %d lines, want 800", n)
	}
}

func TestEventuallyReturnsOnceTrue(t *testing.T) {
	var calls atomic.Int32
	Eventually(t, 10*time.Second, "third call", func() bool { return calls.Add(1) >= 3 })
	if got := calls.Load(); got != 3 {
		t.Fatalf("cond called %d times, want 3", got)
	}
}

// recorder is a testing.TB that records a fatal failure instead of ending
// the goroutine, so the failure path of Eventually can be checked.
type recorder struct {
	testing.TB
	failed string
}

func (r *recorder) Helper() {}

func (r *recorder) Fatalf(format string, args ...any) {
	r.failed = fmt.Sprintf(format, args...)
	panic(r)
}

func (r *recorder) Fatal(args ...any) {
	r.failed = fmt.Sprint(args...)
	panic(r)
}

func TestEventuallyFailsAfterTimeout(t *testing.T) {
	rec := &recorder{TB: t}
	start := time.Now()
	func() {
		defer func() {
			if p := recover(); p != nil && p != rec {
				panic(p)
			}
		}()
		Eventually(rec, 30*time.Millisecond, "never", func() bool { return false })
	}()
	if !strings.Contains(rec.failed, "waiting for never") {
		t.Fatalf("failure message %q does not name the condition", rec.failed)
	}
	if waited := time.Since(start); waited < 30*time.Millisecond {
		t.Fatalf("gave up after %v, before the 30ms timeout", waited)
	}
}

func TestEventuallyNilFailsWithTheLastError(t *testing.T) {
	rec := &recorder{TB: t}
	calls := 0
	func() {
		defer func() {
			if p := recover(); p != nil && p != rec {
				panic(p)
			}
		}()
		EventuallyNil(rec, 30*time.Millisecond, "the dial", func() error {
			calls++
			return fmt.Errorf("attempt %d refused", calls)
		})
	}()
	if want := fmt.Sprintf("waiting for the dial: attempt %d refused", calls); !strings.HasSuffix(rec.failed, want) {
		t.Fatalf("failure message %q, want it to end with %q", rec.failed, want)
	}
}

func TestEventuallyNilReturnsOnceNil(t *testing.T) {
	calls := 0
	EventuallyNil(t, 10*time.Second, "third call", func() error {
		if calls++; calls < 3 {
			return fmt.Errorf("call %d", calls)
		}
		return nil
	})
	if calls != 3 {
		t.Fatalf("f called %d times, want 3", calls)
	}
}

func TestPollReportsWhetherCondHeld(t *testing.T) {
	calls := 0
	if !Poll(10*time.Second, func() bool { calls++; return calls >= 2 }) || calls != 2 {
		t.Fatalf("Poll on a cond true at the second call: called %d times", calls)
	}
	if Poll(5*time.Millisecond, func() bool { return false }) {
		t.Fatal("Poll on a cond that never holds reported true")
	}
}

func TestReceipts(t *testing.T) {
	text := strings.Join([]string{
		"2 messages",
		`[stored] Receipt: {"sender":"k1","msg_id":"m1"}` + "\r",
		"  body that mentions ] Receipt: but is not a receipt line",
		`[read] Receipt: {"sender":"k2","msg_id":"m2"}`,
	}, "\n")
	got := Receipts(t, text)
	want := []receipt.Line{{Label: "stored", Sender: "k1", MsgID: "m1"}, {Label: "read", Sender: "k2", MsgID: "m2"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("Receipts (-want +got):\n%s", diff)
	}
}

func TestReceiptsBadJSON(t *testing.T) {
	rec := &recorder{TB: t}
	func() {
		defer func() {
			if p := recover(); p != nil && p != rec {
				panic(p)
			}
		}()
		Receipts(rec, "[stored] Receipt: {not json")
	}()
	if !strings.Contains(rec.failed, "{not json") {
		t.Fatalf("failure %q does not quote the bad receipt", rec.failed)
	}
}

func TestSigners(t *testing.T) {
	if a, b := Signer(t, 7).Public(), Signer(t, 7).Public(); a != b {
		t.Errorf("Signer(7) gave two keys: %s, %s", a, b)
	}
	seen := map[string]bool{Signer(t, 7).Public().String(): true}
	for n := range 4 {
		k := NumberedSigner(t, n).Public().String()
		if seen[k] {
			t.Fatalf("NumberedSigner(%d) repeats key %s", n, k)
		}
		seen[k] = true
	}
}
