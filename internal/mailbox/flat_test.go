package mailbox

import (
	"fmt"
	"os"
	"testing"
	"time"
)

// memoryDir returns a new folder on /dev/shm where that is a folder, else
// a new temporary folder; either is removed when the test ends.
func memoryDir(t testing.TB) string {
	t.Helper()
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		if dir, err := os.MkdirTemp("/dev/shm", "mailbox-test"); err == nil {
			t.Cleanup(func() { _ = os.RemoveAll(dir) })
			return dir
		}
	}
	return t.TempDir()
}

// A session that receives and acknowledges 20,000 messages in one day,
// reading them in batches of 100 as the model does, never finds its
// mailbox full: consumed messages are tombstones, which the unread bounds
// do not count. Every copy of those messages is still recognised.
func TestTwentyThousandADayNeverFull(t *testing.T) {
	const total, batch = 20_000, 100
	f := newFixture(t)
	// 20,200 writes with fsync take minutes on a busy disk; the property
	// does not depend on the disk, so the mailbox lives in memory-backed
	// storage where the system has it.
	f.root = memoryDir(t)
	f.mb = f.open(t)
	step := 24 * time.Hour / total
	tmpl := f.message(t, msg{id: "template", text: "a message of about one line of prose, like most are"})
	for i := 0; i < total; i += batch {
		receipts := make([]Receipt, 0, batch)
		for j := i; j < i+batch; j++ {
			m := tmpl // Retain checks no signature; only the id and time change
			m.MsgID = fmt.Sprintf("%032x", j)
			m.TS = uint64(f.clock.Now().UnixMilli())
			added, err := f.mb.Retain(bg, m, "alice")
			if err != nil || !added {
				t.Fatalf("message %d: added %v, %v", j+1, added, err)
			}
			receipts = append(receipts, Receipt{Sender: m.From, MsgID: m.MsgID})
			f.clock.Add(step)
		}
		if n, err := f.mb.Acknowledge(receipts); err != nil || n != batch {
			t.Fatalf("acknowledging messages %d–%d: %d, %v", i+1, i+batch, n, err)
		}
	}
	tombs, err := f.mb.Tombstones()
	if err != nil {
		t.Fatal(err)
	}
	if len(tombs) != total {
		t.Errorf("%d tombstones, want %d", len(tombs), total)
	}
	if recs := f.records(t); len(recs) != 0 {
		t.Errorf("%d unread records, want none", len(recs))
	}
	first := tmpl
	first.MsgID = fmt.Sprintf("%032x", 0)
	if added, err := f.mb.Retain(bg, first, "alice"); err != nil || added {
		t.Errorf("a copy of the first message = %v, %v; want it recognised", added, err)
	}
}
