package bolt

import (
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"testing"

	"github.com/interlink-go/interlink/internal/store"
	"github.com/interlink-go/interlink/internal/testutil"
)

// The bytes a bbolt file holds are counted again from the file when it
// opens: a full store is still full after a restart, refuses the same
// enqueue, and a delete after the restart makes room.
func TestBoltBytesRebuiltAtOpen(t *testing.T) {
	t.Parallel()
	const total = 10_000
	opts := &Options{Options: store.Options{RouteBytes: 4_000, TotalBytes: total}}
	s := openBolt(t, newBoltPath(t), opts)
	keys := fillRoutes(t, s, total)
	// An acknowledged entry whose delete is not committed yet counts for
	// nothing, before the restart and after it.
	del(t, s, keys[1])
	before := totals(t, s)
	if want := int64(len(keys)-1) * entrySize; before.Bytes != want {
		t.Fatalf("store.Totals.Bytes = %d before the restart, want %d", before.Bytes, want)
	}

	s = reopen(t, s, opts)
	if got := totals(t, s); got != before {
		t.Fatalf("store.Totals after the restart = %+v, before it %+v", got, before)
	}
	enqueue(t, s, "K#1", string(value("K#1")))
	_, _, err := s.Enqueue("K#x", value("K#x"))
	wantBound(t, err, store.ErrFull, total)
	del(t, s, keys[0])
	enqueue(t, s, "K#x", string(value("K#x")))
}

// A total lowered between runs leaves the entries stored, logs a warning
// at open, and refuses every enqueue until deletes bring the bytes under
// the new total; a route's lowered bound trims that route on its next
// enqueue, as a lowered cap does.
func TestBoltLowerByteBoundsOnReopen(t *testing.T) {
	t.Parallel()
	s := openBolt(t, newBoltPath(t), &Options{Options: store.Options{TotalBytes: 1 << 20}})
	var keys []string
	for i := range 6 {
		k, _ := enqueue(t, s, "K#"+strconv.Itoa(i%2), string(value(itoa(i))))
		keys = append(keys, k)
	}
	var logs testutil.LockedBuffer
	s = reopen(t, s, &Options{Options: store.Options{RouteBytes: 2 * entrySize, TotalBytes: 4 * entrySize, Logger: slog.New(slog.NewTextHandler(&logs, nil))}})
	want := fmt.Sprintf(`level=WARN msg="the queues hold more than the total byte bound; sends are refused until receivers make room" bytes=%d total_bytes=%d`,
		6*entrySize, 4*entrySize)
	if !strings.Contains(logs.String(), want) {
		t.Fatalf("no warning at open of a store over its total; logged:\n%s", logs.String())
	}
	if n := depth(t, s, "K#0") + depth(t, s, "K#1"); n != 6 {
		t.Fatalf("%d entries after the reopen, want the 6 stored", n)
	}
	// 6 entries held, 4 allowed: even a route that drops to its new
	// bound cannot make room for a new one.
	_, _, err := s.Enqueue("K#0", value("new"))
	wantBound(t, err, store.ErrFull, 4*entrySize)
	del(t, s, keys[1]) // K#1
	del(t, s, keys[3]) // K#1
	// 4 held, 3 of them K#0's: it goes to its bound of 2 with the new
	// one, leaving 3 in all.
	_, dropped := enqueue(t, s, "K#0", string(value("new")))
	if dropped != 2 {
		t.Fatalf("dropped = %d, want 2", dropped)
	}
	if got := totals(t, s); got.Bytes != 3*entrySize {
		t.Fatalf("store.Totals.Bytes = %d, want %d", got.Bytes, 3*entrySize)
	}
	wantHead(t, s, "K#0", "", string(value("4")))
}

// An acknowledgement frees its entry's bytes at once for the bound, not
// only when its delete commits: a full store takes a new entry right
// after a receiver acknowledged one, and the shared commit deletes the
// acknowledged entry first.
func TestBoltAckMakesRoomBeforeItsCommit(t *testing.T) {
	t.Parallel()
	const total = 10_000
	s := openBolt(t, newBoltPath(t), &Options{Options: store.Options{RouteBytes: 4_000, TotalBytes: total}, AckDelay: never})
	keys := fillRoutes(t, s, total)
	del(t, s, keys[0])
	if !stored(t, s, keys[0]) {
		t.Fatal("the acknowledged entry left the file before any commit")
	}
	enqueue(t, s, "K#x", string(value("K#x")))
	if stored(t, s, keys[0]) {
		t.Fatal("the enqueue's commit did not delete the acknowledged entry")
	}
	_, _, err := s.Enqueue("K#y", value("K#y"))
	wantBound(t, err, store.ErrFull, total)
}
