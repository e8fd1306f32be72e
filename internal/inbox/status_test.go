package inbox

import (
	"os"
	"testing"
)

func TestListeningSeesTheListenerLock(t *testing.T) {
	b, err := Open(t.TempDir(), "s1")
	if err != nil {
		t.Fatal(err)
	}
	if on, err := b.Listening(); err != nil || on {
		t.Fatalf("before any listener: %v, %v", on, err)
	}
	if _, err := os.Stat(b.lock); !os.IsNotExist(err) {
		t.Fatalf("Listening created the lock file: %v", err)
	}
	release, ok, err := b.Listen()
	if err != nil || !ok {
		t.Fatalf("Listen: %v, %v", ok, err)
	}
	if on, err := b.Listening(); err != nil || !on {
		t.Errorf("with a listener: %v, %v", on, err)
	}
	// The check left the lock to its holder.
	if _, ok, err := b.Listen(); err != nil || ok {
		t.Errorf("a second listener got the lock after the check: %v, %v", ok, err)
	}
	release()
	if on, err := b.Listening(); err != nil || on {
		t.Errorf("after the listener left: %v, %v", on, err)
	}
}

func TestBacklogCountsRecordsPastTheCursor(t *testing.T) {
	b, err := Open(t.TempDir(), "s1")
	if err != nil {
		t.Fatal(err)
	}
	if n, more, err := b.Backlog(); err != nil || n != 0 || more {
		t.Fatalf("no inbox: %d, %v, %v", n, more, err)
	}
	if _, err := os.Stat(b.path); !os.IsNotExist(err) {
		t.Fatalf("Backlog created the inbox: %v", err)
	}
	for _, l := range []string{`{"msg_id":"a"}`, `{"msg_id":"b"}`, `{"msg_id":"c"}`} {
		if err := b.Append([]byte(l)); err != nil {
			t.Fatal(err)
		}
	}
	batch, err := b.Read()
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(batch.End - int64(len(`{"msg_id":"c"}`)+1)); err != nil {
		t.Fatal(err)
	}
	if n, more, err := b.Backlog(); err != nil || n != 1 || more {
		t.Errorf("one record past the cursor: %d, %v, %v", n, more, err)
	}
	for range MaxBatchLines {
		if err := b.Append([]byte(`{"msg_id":"x"}`)); err != nil {
			t.Fatal(err)
		}
	}
	if n, more, err := b.Backlog(); err != nil || n != MaxBatchLines || !more {
		t.Errorf("a full batch: %d, %v, %v", n, more, err)
	}
}
