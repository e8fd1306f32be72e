package mailbox

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/interlink-go/interlink/internal/identity"
)

// retainUntilRefused retains messages of size bytes from the signer from
// until one is refused, and returns the error that refused it and how many
// were stored. Any error other than ErrOverShare and ErrFull fails the
// test.
func retainUntilRefused(tb testing.TB, f *fixture, from *identity.Signer, prefix string, size int) (stored int, err error) {
	tb.Helper()
	tmpl := f.message(tb, msg{from: from, id: "tmpl"})
	tmpl.Text = strings.Repeat("x", size) // Retain checks no signature
	for i := 0; ; i++ {
		m := tmpl
		m.MsgID = fmt.Sprintf("%s-%06d", prefix, i)
		added, err := f.mb.Retain(bg, m, f.peerOf(m))
		switch {
		case errors.Is(err, ErrOverShare), errors.Is(err, ErrFull):
			return stored, err
		case err != nil:
			tb.Fatalf("message %d: %v", i, err)
		case !added:
			tb.Fatalf("message %d was not added", i)
		}
		stored++
	}
}

// A peer that sends large messages faster than the session reads them
// fills only its share of the mailbox's bytes; another peer's message as
// large as the flood's, and one from a sibling session of this identity,
// are still stored, so none of them waits on the relay behind the flood.
func TestOnePeerAtTheByteShareLeavesRoomForOthers(t *testing.T) {
	f := newFixture(t)
	f.root = memoryDir(t)
	f.mb = f.open(t)
	stored, err := retainUntilRefused(t, f, f.alice, "big", 1<<20)
	if !errors.Is(err, ErrOverShare) {
		t.Fatalf("the flood ended with %v after %d messages, want ErrOverShare", err, stored)
	}
	if stored > MaxRecordsBytes/2>>20 {
		t.Errorf("the flooding peer stored %d MiB, more than half the mailbox", stored)
	}
	f.retain(t, msg{from: f.bob, id: "bob", text: strings.Repeat("b", 1<<20)})
	f.retain(t, msg{from: f.me, id: "self"})
	// bob may now take half of what alice and self leave free.
	more, err := retainUntilRefused(t, f, f.bob, "bob-big", 1<<20)
	if !errors.Is(err, ErrOverShare) || more == 0 {
		t.Errorf("bob's own flood stored %d MiB and ended with %v; want some, then ErrOverShare", more, err)
	}
	f.retain(t, msg{from: f.me, id: "self-again"})
}

// The same holds for the number of records: a peer alone holds at most
// half of them, the next sender half of what is left, and so on; each
// keeps room for the ones after it.
func TestOnePeerAtTheRecordShareLeavesRoomForOthers(t *testing.T) {
	if testing.Short() {
		t.Skip("fills a mailbox to its bound")
	}
	f := newFixture(t)
	f.root = memoryDir(t)
	f.mb = f.open(t)
	addRecords(t, f, f.alice, "alice", MaxRecords/2-8, "")
	if n, err := retainUntilRefused(t, f, f.alice, "alice-more", 10); n != 8 || !errors.Is(err, ErrOverShare) {
		t.Fatalf("alice stored %d more and then %v; want 8, then ErrOverShare", n, err)
	}
	addRecords(t, f, f.bob, "bob", MaxRecords/4-8, "")
	if n, err := retainUntilRefused(t, f, f.bob, "bob-more", 10); n != 8 || !errors.Is(err, ErrOverShare) {
		t.Fatalf("bob stored %d more and then %v; want 8, then ErrOverShare", n, err)
	}
	addRecords(t, f, f.me, "self", MaxRecords/8-8, "")
	if n, err := retainUntilRefused(t, f, f.me, "self-more", 10); n != 8 || !errors.Is(err, ErrOverShare) {
		t.Fatalf("this identity stored %d more and then %v; want 8, then ErrOverShare", n, err)
	}
	if n := len(f.records(t)); n != MaxRecords/2+MaxRecords/4+MaxRecords/8 {
		t.Errorf("%d unread records", n)
	}
	// Once the others hold more, alice's share is smaller than what she
	// holds; reading her messages gives her room again.
	recs, _ := f.mb.Receive(0)
	var receipts []Receipt
	for _, r := range recs {
		if r.Message.From == f.alice.Public().String() {
			receipts = append(receipts, r.Receipt())
		}
	}
	if _, err := f.mb.Acknowledge(receipts); err != nil {
		t.Fatal(err)
	}
	f.retain(t, msg{id: "alice-after-reading"})
}

// A sibling session of this identity is one sender like any peer: its
// flood fills its own share and a peer is still heard.
func TestOwnIdentityAtItsShareLeavesRoomForPeers(t *testing.T) {
	f := newFixture(t)
	f.root = memoryDir(t)
	f.mb = f.open(t)
	if _, err := retainUntilRefused(t, f, f.me, "self", 1<<20); !errors.Is(err, ErrOverShare) {
		t.Fatalf("the flood ended with %v, want ErrOverShare", err)
	}
	f.retain(t, msg{id: "alice"})
}
