package inbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func newInbox(t *testing.T) *Inbox {
	t.Helper()
	b, err := Open(t.TempDir(), "s1")
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Create(); err != nil {
		t.Fatal(err)
	}
	return b
}

func appendLines(t *testing.T, b *Inbox, lines ...string) {
	t.Helper()
	for _, l := range lines {
		if err := b.Append([]byte(l)); err != nil {
			t.Fatal(err)
		}
	}
}

func TestOpenRejectsBadSession(t *testing.T) {
	for _, s := range []string{"", "..", "a/b", "a\x00b"} {
		if _, err := Open(t.TempDir(), s); err == nil {
			t.Errorf("Open(%q) accepted", s)
		}
	}
}

func TestAppendReadCommit(t *testing.T) {
	b := newInbox(t)
	appendLines(t, b, `{"n":1}`, `{"n":2}`)
	batch, err := b.Read()
	if err != nil || len(batch.Lines) != 2 || batch.Lines[1] != `{"n":2}` {
		t.Fatalf("Read = %+v, %v", batch, err)
	}
	// Reading does not move the cursor.
	again, _ := b.Read()
	if len(again.Lines) != 2 {
		t.Errorf("second Read = %+v", again)
	}
	if err := b.Commit(batch.End); err != nil {
		t.Fatal(err)
	}
	if next, _ := b.Read(); len(next.Lines) != 0 {
		t.Errorf("after commit = %+v", next)
	}
	if batch.End != int64(len(`{"n":1}`+"\n"+`{"n":2}`+"\n")) {
		t.Errorf("End = %d, want the length of both lines", batch.End)
	}
	if err := b.Append([]byte("two\nlines")); err == nil {
		t.Error("a record with a newline was accepted")
	}
}

func TestCreateKeepsContent(t *testing.T) {
	b := newInbox(t)
	appendLines(t, b, "kept", "unread")
	if err := b.Commit(5); err != nil {
		t.Fatal(err)
	}
	if err := b.Create(); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(b.Path())
	cur, _ := os.ReadFile(b.CursorPath())
	if string(data) != "kept\nunread\n" || string(cur) != "5" {
		t.Errorf("after Create: file %q, cursor %q", data, cur)
	}
}

// Once every line has been shown, the commit empties the file and puts the
// cursor back to 0; while a line is still unread, nothing is cut.
func TestCommitCompactsOnceEverythingIsShown(t *testing.T) {
	b := newInbox(t)
	appendLines(t, b, "one", "two")
	batch, err := b.Read()
	if err != nil {
		t.Fatal(err)
	}
	appendLines(t, b, "three") // arrives while the batch is shown
	if err := b.Commit(batch.End); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(b.Path()); string(data) != "one\ntwo\nthree\n" {
		t.Fatalf("file cut while a line was unread: %q", data)
	}
	rest, err := b.Read()
	if err != nil || len(rest.Lines) != 1 || rest.Lines[0] != "three" {
		t.Fatalf("after the commit = %+v, %v; want three", rest, err)
	}
	if err := b.Commit(rest.End); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(b.Path())
	cur, _ := os.ReadFile(b.CursorPath())
	if len(data) != 0 || string(cur) != "0" {
		t.Fatalf("after everything was shown: file %q, cursor %q; want both empty", data, cur)
	}
	appendLines(t, b, "four")
	if next, err := b.Read(); err != nil || len(next.Lines) != 1 || next.Lines[0] != "four" || next.End != 5 {
		t.Errorf("after compaction = %+v, %v", next, err)
	}
}

// A listener that died after the cursor went back but before the cut shows
// the old lines again; nothing is skipped.
func TestInterruptedCompactionShowsLinesAgain(t *testing.T) {
	b := newInbox(t)
	appendLines(t, b, "one", "two")
	if err := os.WriteFile(b.CursorPath(), []byte("0"), 0o600); err != nil {
		t.Fatal(err)
	}
	appendLines(t, b, "three")
	batch, err := b.Read()
	if err != nil || strings.Join(batch.Lines, ",") != "one,two,three" {
		t.Fatalf("Read = %+v, %v", batch, err)
	}
}

// A torn tail left by a crashed append is cut with the rest once every
// complete line has been shown: it was never confirmed to its writer.
func TestCompactionDropsATornTail(t *testing.T) {
	b := newInbox(t)
	appendLines(t, b, "whole")
	f, err := os.OpenFile(b.Path(), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(`{"torn`); err != nil {
		t.Fatal(err)
	}
	f.Close()
	batch, err := b.Read()
	if err != nil || len(batch.Lines) != 1 {
		t.Fatalf("Read = %+v, %v", batch, err)
	}
	if err := b.Commit(batch.End); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(b.Path()); len(data) != 0 {
		t.Errorf("file after compaction = %q", data)
	}
}

func TestBatchBounds(t *testing.T) {
	b := newInbox(t)
	for i := range MaxBatchLines + 10 {
		appendLines(t, b, fmt.Sprint(i))
	}
	batch, err := b.Read()
	if err != nil || len(batch.Lines) != MaxBatchLines {
		t.Fatalf("Read = %d lines, %v", len(batch.Lines), err)
	}
	if err := b.Commit(batch.End); err != nil {
		t.Fatal(err)
	}
	rest, _ := b.Read()
	if len(rest.Lines) != 10 || rest.Lines[0] != fmt.Sprint(MaxBatchLines) {
		t.Errorf("rest = %v", rest.Lines)
	}

	// The byte bound is checked before each record: a long record is read
	// whole, and ends the batch.
	c := newInbox(t)
	big := strings.Repeat("x", MaxBatchBytes+1)
	appendLines(t, c, "small", big, "after")
	batch, _ = c.Read()
	if len(batch.Lines) != 2 || len(batch.Lines[1]) != len(big) {
		t.Errorf("with a long record: %d lines", len(batch.Lines))
	}
}

// A torn tail is never consumed; the next append cuts it off, and
// both complete records arrive.
func TestTornTail(t *testing.T) {
	b := newInbox(t)
	appendLines(t, b, "first")
	f, err := os.OpenFile(b.Path(), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(`{"torn":`); err != nil {
		t.Fatal(err)
	}
	f.Close()
	batch, _ := b.Read()
	if len(batch.Lines) != 1 || batch.Lines[0] != "first" {
		t.Fatalf("with a torn tail: %v", batch.Lines)
	}
	if batch.End != int64(len("first\n")) {
		t.Errorf("End = %d", batch.End)
	}
	appendLines(t, b, "second")
	batch, _ = b.Read()
	if strings.Join(batch.Lines, "|") != "first|second" {
		t.Errorf("after repair: %v", batch.Lines)
	}
	data, _ := os.ReadFile(b.Path())
	if string(data) != "first\nsecond\n" {
		t.Errorf("file = %q", data)
	}
	// A file that is nothing but a torn line is emptied by the next append.
	c := newInbox(t)
	if err := os.WriteFile(c.Path(), []byte("half"), 0o600); err != nil {
		t.Fatal(err)
	}
	appendLines(t, c, "whole")
	if data, _ := os.ReadFile(c.Path()); string(data) != "whole\n" {
		t.Errorf("file = %q", data)
	}
}

func TestCursorEdgeCases(t *testing.T) {
	b := newInbox(t)
	appendLines(t, b, "a")
	if err := b.Commit(1000); err != nil {
		t.Fatal(err)
	}
	batch, err := b.Read()
	if err != nil || len(batch.Lines) != 1 {
		t.Errorf("cursor past the end: %+v, %v", batch, err)
	}
	if err := os.WriteFile(b.CursorPath(), []byte("not a number"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Read(); !errors.Is(err, ErrCorruptCursor) {
		t.Errorf("corrupt cursor: %v", err)
	}
}

// Records appended while batches are read and committed are
// never skipped.
func TestConcurrentAppendsNeverSkipped(t *testing.T) {
	b := newInbox(t)
	const n = 300
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := range n {
			if err := b.Append(fmt.Appendf(nil, "%d", i)); err != nil {
				t.Error(err)
				return
			}
		}
	})
	var got []string
	deadline := time.Now().Add(20 * time.Second)
	for len(got) < n && time.Now().Before(deadline) {
		batch, err := b.Read()
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, batch.Lines...)
		if err := b.Commit(batch.End); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	if len(got) != n {
		t.Fatalf("read %d records, want %d", len(got), n)
	}
	for i, g := range got {
		if g != fmt.Sprint(i) {
			t.Fatalf("record %d = %q", i, g)
		}
	}
}

func TestListenIsExclusive(t *testing.T) {
	b := newInbox(t)
	release, ok, err := b.Listen()
	if err != nil || !ok {
		t.Fatalf("first Listen = %v, %v", ok, err)
	}
	other, _ := Open(filepath.Dir(filepath.Dir(b.Path())), "s1")
	if _, ok, err := other.Listen(); ok || err != nil {
		t.Errorf("second Listen = %v, %v; want refused", ok, err)
	}
	release()
	r2, ok, err := other.Listen()
	if err != nil || !ok {
		t.Errorf("Listen after release = %v, %v", ok, err)
	} else {
		r2()
	}
}

func TestWait(t *testing.T) {
	b := newInbox(t)
	batch, renew, err := b.Wait(context.Background(), 50*time.Millisecond, 10*time.Millisecond)
	if err != nil || !renew || len(batch.Lines) != 0 {
		t.Errorf("empty Wait = %+v, %v, %v", batch, renew, err)
	}
	go func() {
		time.Sleep(30 * time.Millisecond)
		_ = b.Append([]byte("late"))
	}()
	batch, renew, err = b.Wait(context.Background(), 10*time.Second, 10*time.Millisecond)
	if err != nil || renew || len(batch.Lines) != 1 {
		t.Errorf("Wait with a late record = %+v, %v, %v", batch, renew, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := b.Commit(batch.End); err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.Wait(ctx, time.Hour, 10*time.Millisecond); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled Wait: %v", err)
	}
}
