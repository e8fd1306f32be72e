package mailbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/route"
	"github.com/interlink-go/interlink/internal/testutil"
)

func TestOpenRejectsUnsafeSession(t *testing.T) {
	for _, s := range []string{"", "..", "a/b", "a\nb"} {
		if _, err := Open(t.TempDir(), testutil.NumberedSigner(t, 1).Public(), s, nil); !errors.Is(err, route.ErrInvalidSession) {
			t.Errorf("Open(session %q) = %v, want ErrInvalidSession", s, err)
		}
	}
}

func TestPaths(t *testing.T) {
	f := newFixture(t)
	dir := filepath.Join(f.root, "mailbox", f.me.Public().String())
	if got, want := f.mb.Path(), filepath.Join(dir, "s1.json"); got != want {
		t.Errorf("Path() = %q, want %q", got, want)
	}
	if got, want := f.mb.NotifierLockPath(), filepath.Join(dir, "s1.notifier-lock"); got != want {
		t.Errorf("NotifierLockPath() = %q, want %q", got, want)
	}
	f.retain(t, msg{id: "m1"})
	if _, err := os.Stat(filepath.Join(dir, "s1.lock")); err != nil {
		t.Errorf("lock sidecar: %v", err)
	}
}

func TestRetainDuplicateIsNoOpAcrossHandles(t *testing.T) {
	f := newFixture(t)
	m := f.retain(t, msg{id: "m1"})
	before, err := os.ReadFile(f.mb.Path())
	if err != nil {
		t.Fatal(err)
	}
	other := f.open(t)
	m.Text = "a different body with the same id"
	added, err := other.Retain(bg, m, "alice")
	if err != nil || added {
		t.Fatalf("second Retain = %v, %v; want false, nil", added, err)
	}
	after, _ := os.ReadFile(f.mb.Path())
	if string(before) != string(after) {
		t.Error("duplicate Retain changed the file")
	}
	// The same msg_id from another sender is another message.
	f.retain(t, msg{from: f.bob, id: "m1"})
	if n := len(f.records(t)); n != 2 {
		t.Errorf("%d records, want 2", n)
	}
}

func TestRetainPrunesTombstonesOlderThan24h(t *testing.T) {
	f := newFixture(t)
	read := f.retain(t, msg{id: "read-old"})
	f.retain(t, msg{id: "unread-old"})
	f.retain(t, msg{id: "up-old", task: "t", status: identity.StatusUpdate})
	f.retain(t, msg{id: "up-new", task: "t", status: identity.StatusUpdate, ts: time.Minute}) // supersedes up-old
	readRecent := f.retain(t, msg{id: "read-recent", ts: 2 * time.Hour})
	if _, err := f.mb.Acknowledge([]Receipt{receipt(read), receipt(readRecent)}); err != nil {
		t.Fatal(err)
	}

	f.clock.Set(baseTime.Add(24*time.Hour + time.Millisecond))
	f.retain(t, msg{id: "new", ts: 24 * time.Hour})
	// Unread records first, then the tombstones.
	want := []string{"unread-old", "up-new", "new", "read-recent"}
	if diff := cmp.Diff(want, ids(f.all(t))); diff != "" {
		t.Errorf("records after prune (-want +got):\n%s", diff)
	}

	// A record exactly 24 h old is still kept.
	f = newFixture(t)
	read = f.retain(t, msg{id: "edge"})
	f.mb.Acknowledge([]Receipt{receipt(read)})
	f.clock.Set(baseTime.Add(24 * time.Hour))
	f.retain(t, msg{id: "new"})
	if diff := cmp.Diff([]string{"new", "edge"}, ids(f.all(t))); diff != "" {
		t.Errorf("records at the 24 h edge (-want +got):\n%s", diff)
	}
}

func TestRetainCoalescing(t *testing.T) {
	const (
		up  = identity.StatusUpdate
		res = identity.StatusResult
		fl  = identity.StatusFailed
		cn  = identity.StatusCanceled
		ni  = identity.StatusNeedsInput
	)
	tests := []struct {
		name string
		msgs []msg
		want map[string]string // msg_id -> superseded_by
	}{
		{
			name: "newer update supersedes older",
			msgs: []msg{{id: "u1", task: "t", status: up}, {id: "u2", task: "t", status: up, ts: time.Second}},
			want: map[string]string{"u2": ""},
		},
		{
			name: "update with equal ts supersedes",
			msgs: []msg{{id: "u1", task: "t", status: up}, {id: "u2", task: "t", status: up}},
			want: map[string]string{"u1": "u2", "u2": ""},
		},
		{
			name: "delayed update arrives superseded",
			msgs: []msg{{id: "u2", task: "t", status: up, ts: time.Second}, {id: "u1", task: "t", status: up}},
			want: map[string]string{"u2": ""},
		},
		{
			name: "three updates keep only the newest",
			msgs: []msg{
				{id: "u1", task: "t", status: up}, {id: "u3", task: "t", status: up, ts: 2 * time.Second},
				{id: "u2", task: "t", status: up, ts: time.Second},
			},
			want: map[string]string{"u3": ""},
		},
		{
			name: "terminal supersedes updates",
			msgs: []msg{{id: "u1", task: "t", status: up, ts: time.Second}, {id: "r", task: "t", status: res}},
			want: map[string]string{"u1": "r", "r": ""},
		},
		{
			name: "late update after terminal arrives superseded",
			msgs: []msg{{id: "f", task: "t", status: fl}, {id: "u1", task: "t", status: up, ts: time.Second}},
			want: map[string]string{"f": "", "u1": "f"},
		},
		{
			name: "canceled is terminal",
			msgs: []msg{{id: "u1", task: "t", status: up}, {id: "c", task: "t", status: cn}},
			want: map[string]string{"c": ""},
		},
		{
			name: "terminals never superseded",
			msgs: []msg{{id: "r1", task: "t", status: res}, {id: "r2", task: "t", status: res, ts: time.Second}},
			want: map[string]string{"r1": "", "r2": ""},
		},
		{
			name: "needs_input never coalesced",
			msgs: []msg{
				{id: "q", task: "t", status: ni}, {id: "u1", task: "t", status: up, ts: time.Second},
				{id: "q2", task: "t", status: ni, ts: 2 * time.Second},
			},
			want: map[string]string{"q": "", "u1": "", "q2": ""},
		},
		{
			name: "plain message never coalesced",
			msgs: []msg{{id: "p", task: "t"}, {id: "u1", task: "t", status: up, ts: time.Second}, {id: "p2", task: "t", ts: 2 * time.Second}},
			want: map[string]string{"p": "", "u1": "", "p2": ""},
		},
		{
			name: "no task_id never coalesced",
			msgs: []msg{{id: "u1", status: up}, {id: "u2", status: up, ts: time.Second}, {id: "r", status: res}},
			want: map[string]string{"u1": "", "u2": "", "r": ""},
		},
		{
			name: "different task not coalesced",
			msgs: []msg{{id: "u1", task: "t1", status: up}, {id: "u2", task: "t2", status: up, ts: time.Second}},
			want: map[string]string{"u1": "", "u2": ""},
		},
		{
			name: "different reply_to not coalesced",
			msgs: []msg{
				{id: "u1", task: "t", status: up, replyTo: "k#a"}, {id: "u2", task: "t", status: up, ts: time.Second, replyTo: "k#b"},
				{id: "u3", task: "t", status: up, ts: 2 * time.Second},
			},
			want: map[string]string{"u1": "", "u2": "", "u3": ""},
		},
		{
			name: "same reply_to coalesced",
			msgs: []msg{{id: "u1", task: "t", status: up, replyTo: "k#a"}, {id: "u2", task: "t", status: up, ts: time.Second, replyTo: "k#a"}},
			want: map[string]string{"u2": ""},
		},
		{
			name: "different sender not coalesced",
			msgs: []msg{{id: "u1", task: "t", status: up}, {id: "u2", task: "t", status: up, ts: time.Second, from: testutil.NumberedSigner(t, 3)}},
			want: map[string]string{"u1": "", "u2": ""},
		},
		{
			name: "superseded update keeps its first successor",
			msgs: []msg{
				{id: "u1", task: "t", status: up}, {id: "u2", task: "t", status: up, ts: time.Second},
				{id: "r", task: "t", status: res, ts: 2 * time.Second},
			},
			want: map[string]string{"r": ""},
		},
		{
			name: "result signed before a late update keeps that update's tombstone",
			msgs: []msg{
				{id: "u1", task: "t", status: up}, {id: "u2", task: "t", status: up, ts: 2 * time.Second},
				{id: "r", task: "t", status: res, ts: time.Second},
			},
			want: map[string]string{"u2": "r", "r": ""},
		},
	}
	// want holds every message that leaves a record or a tombstone; an
	// update superseded by a message signed later leaves neither, since a
	// copy of it arrives superseded again (checked below).
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			for _, m := range tt.msgs {
				if _, err := f.mb.Retain(bg, f.message(t, m), "alice"); err != nil {
					t.Fatalf("Retain(%s): %v", m.id, err)
				}
			}
			got := map[string]string{}
			for _, r := range f.all(t) {
				got[r.Message.MsgID] = r.SupersededBy
				if r.State != StateStored {
					t.Errorf("%s: state %s, want %s", r.Message.MsgID, r.State, StateStored)
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("superseded_by (-want +got):\n%s", diff)
			}
			before := ids(f.all(t))
			for _, m := range tt.msgs {
				if added, err := f.mb.Retain(bg, f.message(t, m), "alice"); err != nil || added {
					t.Errorf("a copy of %s = %v, %v; want it recognised", m.id, added, err)
				}
			}
			if after := ids(f.all(t)); !cmp.Equal(before, after) {
				t.Errorf("copies changed the mailbox: %v, then %v", before, after)
			}
		})
	}
}

func TestReceiveIsReadOnlyOrderedAndLimited(t *testing.T) {
	f := newFixture(t)
	f.retain(t, msg{id: "u1", task: "t1", status: identity.StatusUpdate})
	f.retain(t, msg{id: "p1"})
	f.retain(t, msg{id: "u2", task: "t2", status: identity.StatusUpdate})
	f.retain(t, msg{id: "q1", task: "t3", status: identity.StatusNeedsInput})
	acked := f.retain(t, msg{id: "acked"})
	f.retain(t, msg{id: "u1b", task: "t1", status: identity.StatusUpdate, ts: time.Second}) // supersedes u1
	f.retain(t, msg{id: "p2", from: f.bob})
	if _, err := f.mb.Acknowledge([]Receipt{receipt(acked)}); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(f.mb.Path())

	for _, tt := range []struct {
		limit int
		want  []string
	}{
		{0, []string{"p1", "q1", "p2", "u2", "u1b"}},
		{100, []string{"p1", "q1", "p2", "u2", "u1b"}},
		{4, []string{"p1", "q1", "p2", "u2"}},
		{2, []string{"p1", "q1"}},
	} {
		for range 2 { // a second fetch returns the same
			got, err := f.mb.Receive(tt.limit)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, ids(got)); diff != "" {
				t.Errorf("Receive(%d) (-want +got):\n%s", tt.limit, diff)
			}
		}
	}
	after, _ := os.ReadFile(f.mb.Path())
	if string(before) != string(after) {
		t.Error("Receive changed the file")
	}
}

func TestReceiveEmptyMailbox(t *testing.T) {
	f := newFixture(t)
	got, err := f.mb.Receive(20)
	if err != nil || len(got) != 0 {
		t.Fatalf("Receive on a missing file = %v, %v; want empty", got, err)
	}
	if _, err := os.Stat(f.mb.Path()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Receive created the file: %v", err)
	}
}

func TestAcknowledgeCountsAndIsIdempotent(t *testing.T) {
	f := newFixture(t)
	a := f.retain(t, msg{id: "m1"})
	b := f.retain(t, msg{id: "m1", from: f.bob})
	u1 := f.retain(t, msg{id: "u1", task: "t", status: identity.StatusUpdate})
	// Signed at the same time as u1, u2 leaves u1 its tombstone.
	f.retain(t, msg{id: "u2", task: "t", status: identity.StatusUpdate})

	steps := []struct {
		name     string
		receipts []Receipt
		want     int
	}{
		{"one of two same ids", []Receipt{receipt(a)}, 1},
		{"repeated", []Receipt{receipt(a), receipt(a)}, 0},
		{"unknown", []Receipt{{Sender: a.From, MsgID: "nope"}, {Sender: "x", MsgID: "m1"}}, 0},
		{"superseded counts", []Receipt{receipt(u1)}, 1},
		{"duplicate in one call", []Receipt{receipt(b), receipt(b)}, 1},
		{"empty", nil, 0},
	}
	for _, s := range steps {
		n, err := f.mb.Acknowledge(s.receipts)
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if n != s.want {
			t.Errorf("%s: Acknowledge = %d, want %d", s.name, n, s.want)
		}
	}
	got, _ := f.mb.Receive(0)
	if diff := cmp.Diff([]string{"u2"}, ids(got)); diff != "" {
		t.Errorf("unread after acknowledging (-want +got):\n%s", diff)
	}
	if r := f.record(t, "u1"); r.State != StateAcknowledged || r.SupersededBy != "u2" {
		t.Errorf("u1 = %s superseded by %q, want acknowledged and still superseded by u2", r.State, r.SupersededBy)
	}
}

func TestAcknowledgeConcurrentHandlesCountOnce(t *testing.T) {
	f := newFixture(t)
	var receipts []Receipt
	for _, id := range []string{"m1", "m2", "m3"} {
		receipts = append(receipts, receipt(f.retain(t, msg{id: id})))
	}
	handles := []*Mailbox{f.mb, f.open(t), f.open(t), f.open(t)}
	counts := make([]int, len(handles))
	var wg sync.WaitGroup
	for i, h := range handles {
		wg.Go(func() {
			n, err := h.Acknowledge(receipts)
			if err != nil {
				t.Error(err)
			}
			counts[i] = n
		})
	}
	wg.Wait()
	total := 0
	for _, n := range counts {
		total += n
	}
	if total != len(receipts) {
		t.Errorf("acknowledged %v = %d in total, want %d", counts, total, len(receipts))
	}
}

func TestRetainConcurrentHandlesLoseNothing(t *testing.T) {
	f := newFixture(t)
	msgs := make([]identity.Message, 20)
	for i := range msgs {
		msgs[i] = f.message(t, msg{id: "m" + string(rune('a'+i))})
	}
	var wg sync.WaitGroup
	for range 2 {
		h := f.open(t)
		wg.Go(func() {
			for _, m := range msgs {
				if _, err := h.Retain(bg, m, "alice"); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if n := len(f.records(t)); n != len(msgs) {
		t.Errorf("%d records, want %d", n, len(msgs))
	}
}

// writeRecords replaces the mailbox file with n unread plain records from
// alice.
func writeRecords(tb testing.TB, f *fixture, n int) {
	tb.Helper()
	if err := os.Remove(f.mb.Path()); err != nil && !errors.Is(err, os.ErrNotExist) {
		tb.Fatal(err)
	}
	addRecords(tb, f, f.alice, "fill", n, "")
}

// addRecords appends n unread plain records from the signer from, with
// msg_ids prefix-000000 on and the given text, to the mailbox file, as a
// file written by hand would hold them: no bound is checked.
func addRecords(tb testing.TB, f *fixture, from *identity.Signer, prefix string, n int, text string) {
	tb.Helper()
	d, err := f.mb.read()
	if err != nil {
		tb.Fatal(err)
	}
	m := f.message(tb, msg{from: from, id: "x", text: text})
	for i := range n {
		r := Record{Message: m, Peer: f.peerOf(m), State: StateStored}
		r.Message.MsgID = fmt.Sprintf("%s-%06d", prefix, i)
		d.records = append(d.records, r)
	}
	data, _, err := encodeRecords(d.records)
	if err != nil {
		tb.Fatal(err)
	}
	file, err := encode(data, d.notice)
	if err != nil {
		tb.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(f.mb.Path()), 0o700); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(f.mb.Path(), file, 0o600); err != nil {
		tb.Fatal(err)
	}
}

// One sender alone fills at most half of the mailbox; its next message is
// refused as over its share and changes nothing. Duplicates are still
// recognised, the mailbox can be drained, and acknowledged messages, now
// tombstones, no longer count against the unread records.
func TestRetainRecordShare(t *testing.T) {
	if testing.Short() {
		t.Skip("fills a mailbox to its bound")
	}
	f := newFixture(t)
	writeRecords(t, f, MaxRecords/2-1)
	f.retain(t, msg{id: "last-fitting"}) // the 2048th record
	before, _ := os.ReadFile(f.mb.Path())

	extra := f.message(t, msg{id: "one-too-many"})
	added, err := f.mb.Retain(bg, extra, "alice")
	if !errors.Is(err, ErrOverShare) || added {
		t.Fatalf("Retain of record %d = %v, %v; want ErrOverShare", MaxRecords/2+1, added, err)
	}
	if !strings.Contains(err.Error(), "holds 2048 of 2048 unread records") {
		t.Errorf("error %q does not say what the sender holds", err)
	}
	after, _ := os.ReadFile(f.mb.Path())
	if string(before) != string(after) {
		t.Error("refused Retain changed the file")
	}
	// A duplicate is still recognized on a full share.
	if added, err := f.mb.Retain(bg, f.message(t, msg{id: "last-fitting"}), "alice"); err != nil || added {
		t.Errorf("duplicate Retain on a full share = %v, %v", added, err)
	}

	// Draining works, and a notice can still be written.
	if _, err := f.mb.Reserve(bg); err != nil {
		t.Fatalf("Reserve on a full share: %v", err)
	}
	all, err := f.mb.Receive(0)
	if err != nil {
		t.Fatal(err)
	}
	receipts := make([]Receipt, len(all))
	for i := range all {
		receipts[i] = all[i].Receipt()
	}
	if n, err := f.mb.Acknowledge(receipts); err != nil || n != MaxRecords/2 {
		t.Fatalf("Acknowledge on a full share = %d, %v; want %d", n, err, MaxRecords/2)
	}
	// Acknowledged messages are tombstones, which do not count against
	// the unread records: there is room at once, and the tombstones still
	// catch a copy.
	if added, err := f.mb.Retain(bg, extra, "alice"); err != nil || !added {
		t.Fatalf("Retain right after acknowledging everything = %v, %v", added, err)
	}
	if added, err := f.mb.Retain(bg, f.message(t, msg{id: "last-fitting"}), "alice"); err != nil || added {
		t.Errorf("a copy of an acknowledged message = %v, %v; want it dropped", added, err)
	}
	tombs, err := f.mb.Tombstones()
	if err != nil || len(tombs) != MaxRecords/2 {
		t.Fatalf("%d tombstones, %v; want %d", len(tombs), err, MaxRecords/2)
	}
	// Past the replay window the tombstones go.
	f.clock.Add(25 * time.Hour)
	f.retain(t, msg{id: "next day"})
	if tombs, _ := f.mb.Tombstones(); len(tombs) != 0 {
		t.Errorf("%d tombstones after a day, want none", len(tombs))
	}
	if n := len(f.records(t)); n != 2 {
		t.Errorf("%d unread records, want 2", n)
	}
}

func TestRetainUnreadRecordsNeverPrunedWhenFull(t *testing.T) {
	if testing.Short() {
		t.Skip("fills a mailbox to its bound")
	}
	f := newFixture(t)
	writeRecords(t, f, MaxRecords)
	f.clock.Add(48 * time.Hour)
	if _, err := f.mb.Retain(bg, f.message(t, msg{id: "new", ts: 48 * time.Hour}), "alice"); !errors.Is(err, ErrFull) {
		t.Fatalf("Retain = %v, want ErrFull", err)
	}
	if n := len(f.records(t)); n != MaxRecords {
		t.Errorf("%d records, want %d", n, MaxRecords)
	}
}

func TestRetainByteCap(t *testing.T) {
	if testing.Short() {
		t.Skip("fills a mailbox to its bound")
	}
	f := newFixture(t)
	f.retain(t, msg{id: "small"})
	before, _ := os.ReadFile(f.mb.Path())
	// Retain does not verify signatures, so the body is swapped in unsigned.
	big := f.message(t, msg{id: "big"})
	big.Text = strings.Repeat("a", MaxRecordsBytes)
	if _, err := f.mb.Retain(bg, big, "alice"); !errors.Is(err, ErrFull) {
		t.Fatalf("Retain of a 32 MiB body = %v, want ErrFull", err)
	}
	after, _ := os.ReadFile(f.mb.Path())
	if string(before) != string(after) {
		t.Error("refused Retain changed the file")
	}
}

// History shows the inbound half of a conversation as the original does:
// every message of the peer in any state, acknowledged and superseded
// ones with their text and their label, sorted by signed time and msg_id.
func TestHistory(t *testing.T) {
	f := newFixture(t)
	f.retain(t, msg{id: "b", ts: 2 * time.Second})
	f.retain(t, msg{id: "a", ts: time.Second})
	f.retain(t, msg{id: "bob1", from: f.bob})
	f.retain(t, msg{id: "u1", task: "t", status: identity.StatusUpdate, ts: 3 * time.Second})
	f.retain(t, msg{id: "u2", task: "t", status: identity.StatusUpdate, ts: 4 * time.Second})
	q := f.retain(t, msg{id: "q", task: "t", status: identity.StatusNeedsInput, ts: 4 * time.Second})
	if _, err := f.mb.Acknowledge([]Receipt{receipt(q)}); err != nil {
		t.Fatal(err)
	}

	got, err := f.mb.History("alice", 0, false)
	if err != nil {
		t.Fatal(err)
	}
	type shown struct{ ID, Text, State, SupersededBy string }
	var view []shown
	for _, r := range got {
		view = append(view, shown{r.Message.MsgID, r.Message.Text, string(r.State), r.SupersededBy})
	}
	want := []shown{
		{"a", "body of a", "receiver_stored", ""},
		{"b", "body of b", "receiver_stored", ""},
		{"u1", "body of u1", "receiver_stored", "u2"},
		{"q", "body of q", "receiver_acknowledged", ""},
		{"u2", "body of u2", "receiver_stored", ""},
	}
	if diff := cmp.Diff(want, view); diff != "" {
		t.Errorf("History (-want +got):\n%s", diff)
	}
	got, _ = f.mb.History("alice", 2, false)
	if diff := cmp.Diff([]string{"q", "u2"}, ids(got)); diff != "" {
		t.Errorf("History limit 2 (-want +got):\n%s", diff)
	}
	if r := f.record(t, "b"); r.State != StateStored {
		t.Errorf("read-only History changed b to %s", r.State)
	}
	if got, _ := f.mb.History("carol", 0, false); len(got) != 0 {
		t.Errorf("History(carol) = %v, want none", ids(got))
	}
	// Another process, which never saw these messages unread, shows the
	// same.
	other, err := f.open(t).History("alice", 0, false)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(ids(got), ids(other[len(other)-2:])); diff != "" || len(other) != len(want) {
		t.Errorf("another process's History %v, want %v", ids(other), ids(got))
	}
}

// consume acknowledges exactly the returned records, in whatever state
// each is: an unread one becomes acknowledged, a superseded one keeps its
// label, an acknowledged one stays so. The notice stays while messages it
// covers remain unread, and a copy of a consumed message arriving after a
// restart is not stored again.
func TestHistoryConsumeAcknowledgesOnlyReturned(t *testing.T) {
	f := newFixture(t)
	done := f.retain(t, msg{id: "done", ts: -time.Second})
	f.mb.Acknowledge([]Receipt{receipt(done)})
	f.retain(t, msg{id: "u1", task: "p", status: identity.StatusUpdate})
	f.retain(t, msg{id: "q1", task: "t", status: identity.StatusNeedsInput})
	f.retain(t, msg{id: "u2", task: "p", status: identity.StatusUpdate, ts: time.Second})
	q2 := f.retain(t, msg{id: "q2", task: "t", status: identity.StatusNeedsInput, ts: 2 * time.Second})
	f.retain(t, msg{id: "bob1", from: f.bob, ts: 2 * time.Second})
	n, err := f.mb.Reserve(bg)
	if err != nil || n == nil {
		t.Fatalf("Reserve = %v, %v", n, err)
	}

	got, err := f.mb.History("alice", 1, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Message.MsgID != "q2" || got[0].State != StateAcknowledged {
		t.Fatalf("History(limit 1, consume) = %+v, want q2 acknowledged", got)
	}
	unread, _ := f.mb.Receive(0)
	if diff := cmp.Diff([]string{"q1", "bob1", "u2"}, ids(unread)); diff != "" {
		t.Errorf("unread after consuming one (-want +got):\n%s", diff)
	}
	if f.notice(t) == nil {
		t.Error("notice cleared while covered messages remain unread")
	}

	got, err = f.mb.History("alice", 0, true)
	if err != nil {
		t.Fatal(err)
	}
	labels := make(map[string]string)
	for _, r := range got {
		labels[r.Message.MsgID] = string(r.State) + "/" + r.SupersededBy
	}
	wantLabels := map[string]string{
		"done": "receiver_acknowledged/", "u1": "receiver_acknowledged/u2", "q1": "receiver_acknowledged/",
		"u2": "receiver_acknowledged/", "q2": "receiver_acknowledged/",
	}
	if diff := cmp.Diff(wantLabels, labels); diff != "" {
		t.Errorf("History(consume) states (-want +got):\n%s", diff)
	}
	if _, err := f.mb.History("bob", 0, true); err != nil {
		t.Fatal(err)
	}
	if unread, _ := f.mb.Receive(0); len(unread) != 0 {
		t.Errorf("unread after consuming all = %v", ids(unread))
	}
	if n := f.notice(t); n != nil {
		t.Errorf("notice %+v survived consuming every covered message", n)
	}
	// What consuming left is what a fresh read shows.
	again, _ := f.open(t).History("alice", 0, false)
	if diff := cmp.Diff(got, again, cmp.AllowUnexported(Record{}), cmpopts.IgnoreFields(Record{}, "raw")); diff != "" {
		t.Errorf("History after consuming (-returned +read again):\n%s", diff)
	}
	restarted := f.open(t)
	if added, err := restarted.Retain(bg, q2, "alice"); err != nil || added {
		t.Errorf("a copy of a consumed message after a restart = %v, %v; want it dropped", added, err)
	}
	if unread, _ := restarted.Receive(0); len(unread) != 0 {
		t.Errorf("unread after the copy = %v", ids(unread))
	}
}

func TestRestartRecovery(t *testing.T) {
	f := newFixture(t)
	m := f.retain(t, msg{id: "m1"})
	n, err := f.mb.Reserve(bg)
	if err != nil || n == nil {
		t.Fatalf("Reserve = %v, %v", n, err)
	}
	if _, err := f.mb.Finish(bg, n.ID, StateHostQueued); err != nil {
		t.Fatal(err)
	}
	if c, err := f.mb.Acknowledge([]Receipt{receipt(m)}); err != nil || c != 1 {
		t.Fatalf("Acknowledge = %d, %v", c, err)
	}
	again := f.open(t)
	if added, err := again.Retain(bg, m, "alice"); err != nil || added {
		t.Fatalf("Retain after reopening = %v, %v; want a no-op", added, err)
	}
	if n, err := again.Reserve(bg); err != nil || n != nil {
		t.Fatalf("Reserve after reopening = %+v, %v; want none", n, err)
	}
	if r := f.record(t, "m1"); r.State != StateAcknowledged {
		t.Errorf("state %s, want %s", r.State, StateAcknowledged)
	}
}
