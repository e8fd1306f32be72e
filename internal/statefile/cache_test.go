package statefile

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// Locked runs fn under the lock and reports fn's error; a lock it cannot
// take runs nothing and wraps ErrLock.
func TestLockedRunsUnderTheLockAndReportsFnsError(t *testing.T) {
	dir := t.TempDir()
	lock := filepath.Join(dir, "f.lock")
	ran := false
	if err := Locked(context.Background(), lock, func() error {
		ran = true
		// Held: another taker gives up once its context ends.
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := Locked(ctx, lock, func() error { return nil }); !errors.Is(err, ErrLock) {
			t.Errorf("taking the held lock = %v, want ErrLock", err)
		}
		return nil
	}); err != nil || !ran {
		t.Fatalf("Locked = %v, ran %v", err, ran)
	}
	boom := errors.New("boom")
	if err := Locked(context.Background(), lock, func() error { return boom }); !errors.Is(err, boom) {
		t.Errorf("Locked = %v, want fn's error", err)
	}
	// A file where the lock's folder belongs: nothing can be created under
	// it, even by root.
	blocker := filepath.Join(dir, "blocker")
	if err := os.WriteFile(blocker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	ran = false
	err := Locked(context.Background(), filepath.Join(blocker, "f.lock"), func() error { ran = true; return nil })
	if !errors.Is(err, ErrLock) || ran {
		t.Errorf("Locked under a file = %v (ran %v), want ErrLock without running fn", err, ran)
	}
}

// The cache answers only for the exact bytes it last remembered, and never
// hands out the value it keeps.
func TestCacheAnswersOnlyTheSameBytesWithAClone(t *testing.T) {
	c := NewCache(slices.Clone[[]int])
	if _, ok := c.Get([]byte("a")); ok {
		t.Error("an empty cache answered")
	}
	v := []int{1, 2}
	c.Put([]byte("a"), v)
	v[0] = 9 // the caller's copy; the cache kept its own
	got, ok := c.Get([]byte("a"))
	if !ok || !slices.Equal(got, []int{1, 2}) {
		t.Fatalf("Get = %v, %v; want [1 2]", got, ok)
	}
	got[1] = 9 // the caller's copy again
	if again, _ := c.Get([]byte("a")); !slices.Equal(again, []int{1, 2}) {
		t.Errorf("a changed result changed the cache: %v", again)
	}
	if _, ok := c.Get([]byte("b")); ok {
		t.Error("other bytes got an answer")
	}
	c.Put([]byte("b"), []int{3})
	if _, ok := c.Get([]byte("a")); ok {
		t.Error("bytes remembered before the last Put got an answer")
	}
}
