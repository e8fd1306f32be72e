package roster

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/testutil"
	"github.com/interlink-go/interlink/internal/wire"
)

// testEpoch is a fixed receipt time in Unix ms.
const testEpoch = 1_700_000_000_000

// announcement decodes body as /announce does.
func announcement(tb testing.TB, body string) wire.Announce {
	tb.Helper()
	a, err := wire.DecodeAnnounce([]byte(body))
	if err != nil {
		tb.Fatalf("announcement %s: %v", body, err)
	}
	return a
}

// upsert stores body, received at at, and fails unless it was stored.
func upsert(tb testing.TB, ro *Roster, body string, at int64) (evicted int) {
	tb.Helper()
	evicted, stored := ro.Upsert(announcement(tb, body), at)
	if !stored {
		tb.Fatalf("announcement %s not stored", body)
	}
	return evicted
}

// written returns what l writes, checking that it is as long as l says
// and that it is JSON.
func written(tb testing.TB, l *Listing) string {
	tb.Helper()
	var buf bytes.Buffer
	n, err := l.WriteTo(&buf)
	if err != nil || n != int64(buf.Len()) {
		tb.Fatalf("WriteTo: %d, %v for %d bytes", n, err, buf.Len())
	}
	if buf.Len() != l.Len() {
		tb.Fatalf("the listing says %d bytes and writes %d: %s", l.Len(), buf.Len(), buf.Bytes())
	}
	if !json.Valid(buf.Bytes()) {
		tb.Fatalf("the listing is not JSON: %s", buf.Bytes())
	}
	return buf.String()
}

// TestListingSplicesTheAgesIntoTheAnnouncements: a listing serves each
// live announcement as it was sent, in roster key order, with the age it
// has at the listing's time in place of any age the sender put in.
func TestListingSplicesTheAgesIntoTheAnnouncements(t *testing.T) {
	var ro Roster
	upsert(t, &ro, `{"pubkey":"b","age_ms":99,"x":[1, 2]}`, testEpoch)
	upsert(t, &ro, `{"pubkey":"a","session":{"session_id":"s"}}`, testEpoch+500)
	upsert(t, &ro, `{"pubkey":"a"}`, testEpoch+1000)
	got := written(t, ro.Snapshot().Listing(nil, nil, false, testEpoch+1500))
	want := `{"roster":[{"age_ms":500,"pubkey":"a"},{"age_ms":1000,"pubkey":"a","session":{"session_id":"s"}},{"age_ms":1500,"pubkey":"b","x":[1,2]}]}`
	if got != want {
		t.Errorf("listing\n%s\nwant\n%s", got, want)
	}
	if got := written(t, (&Roster{}).Snapshot().Listing(nil, nil, false, testEpoch)); got != `{"roster":[]}` {
		t.Errorf("empty listing %s", got)
	}
}

// TestFullRosterGivesWayToNewcomers: at [Cap] entries a newcomer takes the
// place of the entry refreshed longest ago, and a refresh moves an entry
// to the back of that line.
func TestFullRosterGivesWayToNewcomers(t *testing.T) {
	var ro Roster
	for i := range Cap {
		upsert(t, &ro, fmt.Sprintf(`{"pubkey":"k%05d"}`, i), testEpoch+int64(i))
	}
	upsert(t, &ro, `{"pubkey":"k00000"}`, testEpoch+Cap)
	if n := upsert(t, &ro, `{"pubkey":"newcomer"}`, testEpoch+Cap+1); n != 1 {
		t.Errorf("%d entries gave way, want 1", n)
	}
	if ro.Len() != Cap || ro.Has("k00001") || !ro.Has("k00000") || !ro.Has("newcomer") {
		t.Errorf("%d entries; k00001 %v, k00000 %v, newcomer %v: want only the oldest gone",
			ro.Len(), ro.Has("k00001"), ro.Has("k00000"), ro.Has("newcomer"))
	}
}

// TestRosterKeepsItsListingWithinMaxBytes: announcements of the largest
// size never make a listing longer than [MaxBytes], ages at their widest
// included; the entries refreshed longest ago make room.
func TestRosterKeepsItsListingWithinMaxBytes(t *testing.T) {
	var ro Roster
	pad := strings.Repeat("x", wire.MaxAnnounceBytes-len(`{"pubkey":"k0000","pad":""}`))
	const n = 2000 // 2000 x 4 KiB is past the byte bound, not the count
	for i := range n {
		upsert(t, &ro, fmt.Sprintf(`{"pubkey":"k%04d","pad":"%s"}`, i, pad), testEpoch)
		if ro.Size() > budget {
			t.Fatalf("after %d announcements the roster costs %d bytes, more than %d", i+1, ro.Size(), budget)
		}
	}
	l := ro.Snapshot().Listing(nil, nil, false, testEpoch+retainMs-1)
	if l.Len() > MaxBytes {
		t.Fatalf("a listing of %d bytes, more than %d", l.Len(), MaxBytes)
	}
	if ro.Has("k0000") || !ro.Has(fmt.Sprintf("k%04d", n-1)) || ro.Len() < MaxBytes/(wire.MaxAnnounceBytes+wire.RosterEntryOverhead) {
		t.Errorf("%d entries kept; the first %v, the last %v", ro.Len(), ro.Has("k0000"), ro.Has(fmt.Sprintf("k%04d", n-1)))
	}
	written(t, l)
}

// TestRosterRetention: an entry [Retention] old is hidden from listings at
// once and pruned by the next announcement; an entry received "in the
// future" (the clock went back) counts as new.
func TestRosterRetention(t *testing.T) {
	var ro Roster
	upsert(t, &ro, `{"pubkey":"old"}`, testEpoch)
	upsert(t, &ro, `{"pubkey":"ahead"}`, testEpoch+retainMs+time.Hour.Milliseconds())
	now := testEpoch + retainMs
	if got := written(t, ro.Snapshot().Listing(nil, nil, false, now)); got != `{"roster":[{"age_ms":0,"pubkey":"ahead"}]}` {
		t.Errorf("listing at expiry: %s", got)
	}
	upsert(t, &ro, `{"pubkey":"new"}`, now)
	if ro.Has("old") || ro.Len() != 2 {
		t.Errorf("after the next announcement: old %v, %d entries", ro.Has("old"), ro.Len())
	}
}

// TestSnapshotIsMadeOncePerChange: listings of an unchanged roster share
// one snapshot and one tag; every change, a removal included, makes a new
// one with another tag.
func TestSnapshotIsMadeOncePerChange(t *testing.T) {
	var ro Roster
	upsert(t, &ro, `{"pubkey":"a"}`, testEpoch)
	first := ro.Snapshot()
	if ro.Snapshot() != first {
		t.Fatal("an unchanged roster made a new snapshot")
	}
	l1, l2 := first.Listing(nil, nil, false, testEpoch), first.Listing(nil, nil, false, testEpoch+1000)
	if l1.Tag() != l2.Tag() || !strings.HasPrefix(l1.Tag(), `W/"r`) {
		t.Errorf("tags %s and %s of one snapshot at two times", l1.Tag(), l2.Tag())
	}
	upsert(t, &ro, `{"pubkey":"b"}`, testEpoch)
	second := ro.Snapshot()
	ro.Remove("b")
	third := ro.Snapshot()
	if second == first || third == second {
		t.Fatal("a change left the old snapshot in place")
	}
	if t2 := second.Listing(nil, nil, false, testEpoch).Tag(); t2 == l1.Tag() {
		t.Error("a new entry kept the listing's tag")
	}
	// The same entry, re-announced at the same moment, lists the same.
	if t3 := third.Listing(nil, nil, false, testEpoch).Tag(); t3 != l1.Tag() {
		t.Errorf("the roster back as it was has tag %s, was %s", t3, l1.Tag())
	}
}

// TestListingMatchesIfNoneMatch: a listing matches If-None-Match values
// that name its tag, weak or strong, in a list or alone, and "*".
func TestListingMatchesIfNoneMatch(t *testing.T) {
	var ro Roster
	upsert(t, &ro, `{"pubkey":"a"}`, testEpoch)
	l := ro.Snapshot().Listing(nil, nil, false, testEpoch)
	strong := strings.TrimPrefix(l.Tag(), "W/")
	for _, values := range [][]string{{l.Tag()}, {strong}, {`"x", ` + l.Tag()}, {`"x"`, strong}, {"*"}} {
		if !l.Matches(values) {
			t.Errorf("%q does not match %s", values, l.Tag())
		}
	}
	for _, values := range [][]string{nil, {""}, {`"x"`}, {`W/"r0000000000000000"`}, {strings.ToUpper(l.Tag())}} {
		if l.Matches(values) {
			t.Errorf("%q matches %s", values, l.Tag())
		}
	}
}

// TestListingOfKeysFindsEachKeysEntries: a lookup lists the entries of
// each key asked, with or without a session, and no entry of a key that
// merely starts the same.
func TestListingOfKeysFindsEachKeysEntries(t *testing.T) {
	var ro Roster
	for _, body := range []string{`{"pubkey":"k1"}`, `{"pubkey":"k1","session":{"session_id":"s"}}`,
		`{"pubkey":"k10"}`, `{"pubkey":"k10","session":{"session_id":"t"}}`, `{"pubkey":"k2"}`} {
		upsert(t, &ro, body, testEpoch)
	}
	got := written(t, ro.Snapshot().Listing([]string{"k1", "k3"}, nil, false, testEpoch))
	want := `{"roster":[{"age_ms":0,"pubkey":"k1"},{"age_ms":0,"pubkey":"k1","session":{"session_id":"s"}}]}`
	if got != want {
		t.Errorf("lookup of k1 and k3:\n%s\nwant\n%s", got, want)
	}
}

// failingWriter fails every write after the first n.
type failingWriter struct{ n int }

var errWrite = errors.New("client left")

func (w *failingWriter) Write(p []byte) (int, error) {
	if w.n == 0 {
		return 0, errWrite
	}
	w.n--
	return len(p), nil
}

// TestListingStopsAtTheFirstWriteError: a client that leaves costs no
// more writes.
func TestListingStopsAtTheFirstWriteError(t *testing.T) {
	var ro Roster
	for i := range 10 {
		upsert(t, &ro, fmt.Sprintf(`{"pubkey":"k%d"}`, i), testEpoch)
	}
	w := &failingWriter{n: 2}
	if _, err := ro.Snapshot().Listing(nil, nil, false, testEpoch).WriteTo(w); !errors.Is(err, errWrite) || w.n != 0 {
		t.Errorf("WriteTo: %v, %d writes left", err, w.n)
	}
}

// TestPrivateListingShowsDetailsToOwnersAndReaders: with private set, an
// entry shows its details to its own key and the readers it names, its
// public variant to everyone else if it is discoverable, and nothing to
// them otherwise; the page's [Entry.Public] is that variant.
func TestPrivateListingShowsDetailsToOwnersAndReaders(t *testing.T) {
	alice, bob, carol, dave := testutil.Signer(t, 1), testutil.Signer(t, 2), testutil.Signer(t, 3), testutil.Signer(t, 4)
	var ro Roster
	for _, a := range []identity.Announcement{
		alice.AnnouncePrivate("alice", identity.SessionInfo{SessionID: "a1", Summary: "alice plans"}, testEpoch/1000, nil,
			[]identity.PublicKey{bob.Public()}, true),
		dave.AnnouncePrivate("dave", identity.SessionInfo{SessionID: "d1", Summary: "dave plans"}, testEpoch/1000, nil, nil, false),
	} {
		body, err := identity.Marshal(a)
		if err != nil {
			t.Fatal(err)
		}
		upsert(t, &ro, string(body), testEpoch)
	}
	snap := ro.Snapshot()
	list := func(requester *identity.Signer) string {
		var key *identity.PublicKey
		if requester != nil {
			k := requester.Public()
			key = &k
		}
		return written(t, snap.Listing(nil, key, true, testEpoch))
	}
	for name, c := range map[string]struct {
		requester             *identity.Signer
		alicePlans, davePlans bool
		aliceListed           bool
	}{
		"bob, alice's reader": {bob, true, false, true},
		"alice herself":       {alice, true, false, true},
		"dave himself":        {dave, false, true, true},
		"carol, a stranger":   {carol, false, false, true},
		"unsigned":            {nil, false, false, true},
	} {
		got := list(c.requester)
		if strings.Contains(got, "alice plans") != c.alicePlans || strings.Contains(got, "dave plans") != c.davePlans ||
			strings.Contains(got, alice.Public().String()) != c.aliceListed {
			t.Errorf("%s sees %s", name, got)
		}
		if strings.Contains(got, "readers") || strings.Contains(got, "private_sig") {
			t.Errorf("%s sees the privacy extension: %s", name, got)
		}
	}
	if got := list(nil); strings.Contains(got, dave.Public().String()) {
		t.Errorf("an unsigned listing shows dave, who is not discoverable: %s", got)
	}
	if got := written(t, snap.Listing(nil, nil, false, testEpoch)); !strings.Contains(got, "dave plans") {
		t.Errorf("without private set everyone gets every entry: %s", got)
	}
	for e := range snap.All() {
		pub := e.Public()
		switch {
		case strings.HasPrefix(e.Key(), alice.Public().String()) && (pub == nil || bytes.Contains(pub, []byte("alice plans"))):
			t.Errorf("alice's public variant: %s", pub)
		case strings.HasPrefix(e.Key(), dave.Public().String()) && pub != nil:
			t.Errorf("dave, not discoverable, has a public variant: %s", pub)
		}
	}
}
