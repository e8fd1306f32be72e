package rosterlog

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/nats-io/nats.go/jetstream"

	natsstore "github.com/interlink-go/interlink/internal/store/nats"
	"github.com/interlink-go/interlink/internal/store/natstest"
	"github.com/interlink-go/interlink/internal/testutil"
)

// record is one call of a roster watch.
type record struct {
	Rev   uint64
	Key   string
	Value string
	Gone  bool // a removal
}

// recordWatch collects what a roster watch applies.
type recordWatch struct {
	ch chan record
}

// watchRecords starts a watch of r and stops it at cleanup. The watch
// starts in the background: it delivers the records there are when it
// starts, then changes.
func watchRecords(t *testing.T, r *Roster) *recordWatch {
	t.Helper()
	w := &recordWatch{ch: make(chan record, 1024)}
	stop := r.Watch(func(rev uint64, key string, value []byte) {
		w.ch <- record{Rev: rev, Key: key, Value: string(value), Gone: value == nil}
	})
	t.Cleanup(stop)
	return w
}

// watchLive starts a watch of r and returns once it delivers changes as
// they come: it writes a record of its own and waits for it. What the
// watch applied until then is dropped.
func watchLive(t *testing.T, r *Roster) *recordWatch {
	t.Helper()
	w := watchRecords(t, r)
	key := "live " + t.Name()
	rev := put(t, r, key, "")
	for w.next(t).Rev != rev {
	}
	return w
}

// next returns the next applied record.
func (w *recordWatch) next(t *testing.T) record {
	t.Helper()
	select {
	case rec := <-w.ch:
		return rec
	case <-time.After(hintWait):
		t.Fatalf("no roster record within %v", hintWait)
		return record{}
	}
}

// take returns the next n applied records.
func (w *recordWatch) take(t *testing.T, n int) []record {
	t.Helper()
	out := make([]record, n)
	for i := range out {
		out[i] = w.next(t)
	}
	return out
}

// openRoster opens a store on a new stream of srv and its roster bucket.
func openRoster(t *testing.T, srv *natstest.Server, stream string, opts *Options) (*natsstore.Store, *Roster) {
	t.Helper()
	s := openStore(t, srv, stream)
	r, err := Open(s, opts)
	if err != nil {
		t.Fatalf("OpenRoster: %v", err)
	}
	return s, r
}

func put(t *testing.T, r *Roster, key, value string) uint64 {
	t.Helper()
	rev, err := r.Put(key, []byte(value))
	if err != nil {
		t.Fatalf("Put(%q): %v", key, err)
	}
	return rev
}

// Two processes on one stream share the roster: one's changes reach the
// other's watch in order, with the revisions Put and Delete returned, and
// a watch that starts later gets the last record of each key, oldest
// first.
func TestRosterSharedInRevisionOrder(t *testing.T) {
	t.Parallel()
	srv := natstest.Start(t, nil)
	_, a := openRoster(t, srv, "ROSTER", nil)
	_, b := openRoster(t, srv, "ROSTER", nil)
	if a.Bucket() != "ROSTER_ROSTER" {
		t.Errorf("bucket = %q", a.Bucket())
	}
	w := watchLive(t, b)
	r1 := put(t, a, "K#1", "one")
	r2 := put(t, a, "K#2", "two")
	r3 := put(t, a, "K#1", "one again")
	r4, err := a.Delete("K#2")
	if err != nil {
		t.Fatal(err)
	}
	want := []record{{r1, "K#1", "one", false}, {r2, "K#2", "two", false}, {r3, "K#1", "one again", false}, {r4, "K#2", "", true}}
	if diff := cmp.Diff(want, w.take(t, 4)); diff != "" {
		t.Fatalf("watched records (-want +got):\n%s", diff)
	}
	r5 := put(t, b, "K#3", "")
	if diff := cmp.Diff(record{r5, "K#3", "", false}, w.next(t)); diff != "" {
		t.Fatalf("an empty value (-want +got):\n%s", diff)
	}

	late := watchRecords(t, a)
	want = []record{{r3, "K#1", "one again", false}, {r4, "K#2", "", true}, {r5, "K#3", "", false}}
	if diff := cmp.Diff(want, late.take(t, 4)[1:]); diff != "" {
		t.Fatalf("records of a late watch (-want +got):\n%s", diff)
	}
}

// Any string is a key: subject syntax, empty, and keys too long for a
// readable bucket key, which are hashed.
func TestRosterKeysOfAnyShape(t *testing.T) {
	t.Parallel()
	srv := natstest.Start(t, nil)
	_, r := openRoster(t, srv, "KEYS", nil)
	w := watchLive(t, r)
	long := strings.Repeat("é", 400)
	keys := []string{"", "a.b", "*", ">", "K# x", "12:34", "\x00", long, long + "x"}
	for _, k := range keys {
		put(t, r, k, "v "+k)
	}
	for _, k := range keys {
		if got := w.next(t); got.Key != k || got.Value != "v "+k {
			t.Fatalf("watched %q = %q, want %q = %q", got.Key, got.Value, k, "v "+k)
		}
	}
	if _, err := r.Delete(long); err != nil {
		t.Fatal(err)
	}
	if got := w.next(t); got.Key != long || !got.Gone {
		t.Fatalf("removal of a hashed key watched as %+v", got)
	}
	if bk := bucketKey(long); !strings.HasPrefix(bk, "h") || len(bk) != 44 {
		t.Errorf("bucket key of a long key = %q, want h and 43 characters", bk)
	}
}

// Records that another client wrote into the bucket, and that the store
// did not make, are skipped; a delete marker of a readable key is not.
func TestRosterIgnoresForeignRecords(t *testing.T) {
	t.Parallel()
	srv := natstest.Start(t, nil)
	_, r := openRoster(t, srv, "FOREIGN", nil)
	_, js := jsClient(t, srv)
	kv, err := js.KeyValue(t.Context(), r.Bucket())
	if err != nil {
		t.Fatal(err)
	}
	w := watchLive(t, r)
	put(t, r, "K#s", "mine")
	for key, body := range map[string]string{
		"junk":         "no length",
		"kS00jcw":      "3:abc",  // the key does not give this bucket key
		bucketKey("x"): "9:x",    // the length runs past the end
		bucketKey("y"): "01:y",   // a leading zero
		bucketKey("z"): "+1:z",   // a sign
		bucketKey("w"): "1w",     // no colon
		"hAAAA":        "4:long", // a hashed key that does not match
	} {
		if _, err := kv.Put(t.Context(), key, []byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := kv.Delete(t.Context(), bucketKey("K#s")); err != nil {
		t.Fatal(err)
	}
	got := w.take(t, 2)
	if got[0].Key != "K#s" || got[0].Value != "mine" || got[1].Key != "K#s" || !got[1].Gone {
		t.Fatalf("watched %+v, want the record and its removal", got)
	}
}

// Drop removes one revision without telling watchers: a later watch no
// longer sees it, a refreshed key keeps its newer record, and a revision
// that is gone is no error.
func TestRosterDrop(t *testing.T) {
	t.Parallel()
	srv := natstest.Start(t, nil)
	_, r := openRoster(t, srv, "DROP", nil)
	old := put(t, r, "K#a", "a1")
	newer := put(t, r, "K#a", "a2")
	b := put(t, r, "K#b", "b")
	for _, rev := range []uint64{old, b, b, 1, newer + 1000} {
		if err := r.Drop(rev); err != nil {
			t.Fatalf("Drop(%d): %v", rev, err)
		}
	}
	w := watchRecords(t, r)
	if got := w.next(t); got.Key != "K#a" || got.Value != "a2" || got.Rev != newer {
		t.Fatalf("first record after the drops = %+v, want K#a a2", got)
	}
	c := put(t, r, "K#c", "c")
	if got := w.next(t); got.Rev != c {
		t.Fatalf("next record = %+v, want K#c: the dropped K#b came back", got)
	}
}

// The bucket holds at most MaxRecords records and discards the oldest,
// and refuses records above MaxValue.
func TestRosterBounds(t *testing.T) {
	t.Parallel()
	srv := natstest.Start(t, nil)
	_, r := openRoster(t, srv, "BOUNDS", &Options{MaxRecords: 4, MaxValue: 64})
	var revs []uint64
	for i := range 6 {
		revs = append(revs, put(t, r, "K#"+itoa(i), "v"))
	}
	info, err := r.stream.Info(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != 4 || info.State.FirstSeq != revs[2] {
		t.Fatalf("bucket holds %d records from %d, want 4 from %d", info.State.Msgs, info.State.FirstSeq, revs[2])
	}
	if _, err := r.Put("K#big", make([]byte, 64)); err == nil {
		t.Fatal("Put of a record above MaxValue succeeded")
	}
	put(t, r, "K#fits", strings.Repeat("x", 64-len("K#fits")))
}

// An existing bucket with settings the roster cannot use, such as one that
// `nats kv add` makes (deletes denied, new records refused when full), is
// reported setting by setting, with what to do.
func TestRosterRefusesUnfitBucket(t *testing.T) {
	t.Parallel()
	srv := natstest.Start(t, nil)
	_, js := jsClient(t, srv)
	if _, err := js.CreateKeyValue(t.Context(), jetstream.KeyValueConfig{Bucket: "UNFIT_ROSTER"}); err != nil {
		t.Fatal(err)
	}
	s := openStore(t, srv, "UNFIT")
	_, err := Open(s, nil)
	var ce *natsstore.StreamConfigError
	if !errors.As(err, &ce) || !errors.Is(err, natsstore.ErrStreamConfig) {
		t.Fatalf("OpenRoster on an unfit bucket: %v, want a StreamConfigError", err)
	}
	fields := map[string]bool{}
	for _, m := range ce.Mismatches {
		fields[m.Field] = true
	}
	for _, f := range []string{"deny_delete", "discard", "max_msgs", "max_age"} {
		if !fields[f] {
			t.Errorf("mismatches %v lack %s", ce.Mismatches, f)
		}
	}
	if msg := err.Error(); !strings.Contains(msg, "nats kv rm UNFIT_ROSTER") || strings.Contains(msg, "queue cap") {
		t.Errorf("message %q does not say how to fix the bucket", msg)
	}
}

// A roster watch goes on after the server restarts: changes made after
// the restart reach it.
func TestRosterWatchSurvivesServerRestart(t *testing.T) {
	t.Parallel()
	srv := natstest.Start(t, nil)
	_, ra := openRoster(t, srv, "RRESTART", nil)
	_, rb := openRoster(t, srv, "RRESTART", nil)
	w := watchLive(t, rb)
	put(t, ra, "K#before", "1")
	if got := w.next(t); got.Key != "K#before" {
		t.Fatalf("watched %+v", got)
	}
	srv.Restart()
	// A put fails until the connection is back; one that timed out may
	// still have been stored, and is watched like any other.
	var rev uint64
	testutil.EventuallyNil(t, hintWait, "a Put after the restart", func() (err error) {
		rev, err = ra.Put("K#after", []byte("2"))
		return err
	})
	for {
		got := w.next(t)
		if got.Key == "K#after" && got.Value == "2" && got.Rev <= rev {
			if got.Rev == rev {
				break
			}
			continue
		}
		if got.Key != "K#before" {
			t.Fatalf("watched %+v after the restart", got)
		}
	}
}

func FuzzRosterRecord(f *testing.F) {
	for _, s := range []string{"", "0:", "3:abcvalue", "01:a", "9:x", ":x", "-1:x", "12345678:"} {
		f.Add("k", []byte(s))
	}
	f.Fuzz(func(t *testing.T, key string, body []byte) {
		if k, v, ok := parseRecord(bucketKey(key), body); ok {
			if k != key {
				t.Fatalf("parsed key %q from a body for %q", k, key)
			}
			if got := recordBody(k, v); string(got) != string(body) {
				t.Fatalf("body %q parses and re-encodes as %q", body, got)
			}
		}
		k, v, ok := parseRecord(bucketKey(key), recordBody(key, body))
		if !ok || k != key || string(v) != string(body) {
			t.Fatalf("record %q = %q does not round-trip: %q %q %v", key, body, k, v, ok)
		}
	})
}
