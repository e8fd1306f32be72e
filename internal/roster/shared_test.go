package roster

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"

	"github.com/interlink-go/interlink/internal/roster/rostertest"
)

// logRecorder is a slog handler that keeps the messages of its records.
type logRecorder struct {
	mu   sync.Mutex
	msgs []string // guarded by mu
}

func (l *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (l *logRecorder) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *logRecorder) WithGroup(string) slog.Handler            { return l }

func (l *logRecorder) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.msgs = append(l.msgs, r.Message)
	return nil
}

// count returns how many records had message msg.
func (l *logRecorder) count(msg string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, m := range l.msgs {
		if m == msg {
			n++
		}
	}
	return n
}

// share returns a shared roster on log with its own local copy, stopped
// when the test ends.
func share(tb testing.TB, log Log) (*Shared, *Roster, *logRecorder) {
	tb.Helper()
	local, rec := &Roster{}, &logRecorder{}
	sr := Share(local, log, slog.New(rec))
	tb.Cleanup(sr.Stop)
	return sr, local, rec
}

// listing returns what local lists at now.
func listing(tb testing.TB, local *Roster, now int64) string {
	tb.Helper()
	return written(tb, local.Snapshot().Listing(nil, nil, false, now))
}

// TestSharedAnnouncementIsListedOnEveryCopy: an announcement made through
// one shared roster is in its own copy when Announce returns, and every
// copy, a later one included, lists the same; a removal likewise.
func TestSharedAnnouncementIsListedOnEveryCopy(t *testing.T) {
	log := rostertest.New()
	a, localA, _ := share(t, log)
	_, localB, _ := share(t, log)
	done := make(chan struct{})
	if err := a.Announce(announcement(t, `{"pubkey":"k","name":"n"}`), testEpoch, done); err != nil {
		t.Fatal(err)
	}
	if err := a.Announce(announcement(t, `{"pubkey":"j"}`), testEpoch+5, done); err != nil {
		t.Fatal(err)
	}
	if err := a.Unregister("j", done); err != nil {
		t.Fatal(err)
	}
	_, localC, _ := share(t, log)
	want := `{"roster":[{"age_ms":10,"name":"n","pubkey":"k"}]}`
	for name, local := range map[string]*Roster{"a": localA, "b": localB, "later": localC} {
		if got := listing(t, local, testEpoch+10); got != want {
			t.Errorf("%s lists %s, want %s", name, got, want)
		}
	}
}

// TestSharedRosterEvictsAlikeOnEveryCopy: when the roster is full, every
// copy lets the same entry give way, the one refreshed longest ago, and
// the shared roster that wrote the newcomer drops it from the log, so that
// a copy made later does not hold it either.
func TestSharedRosterEvictsAlikeOnEveryCopy(t *testing.T) {
	log := rostertest.New()
	a, localA, _ := share(t, log)
	b, localB, _ := share(t, log)
	done := make(chan struct{})
	for i := range Cap {
		sr := a
		if i%2 == 1 {
			sr = b
		}
		if err := sr.Announce(announcement(t, fmt.Sprintf(`{"pubkey":"k%05d"}`, i)), testEpoch+int64(i), done); err != nil {
			t.Fatal(err)
		}
	}
	oldestRec, _ := log.Record("k00000")
	oldest := oldestRec.Rev
	if err := a.Announce(announcement(t, `{"pubkey":"newcomer"}`), testEpoch+Cap, done); err != nil {
		t.Fatal(err)
	}
	_, later, _ := share(t, log)
	for name, local := range map[string]*Roster{"a": localA, "b": localB, "later": later} {
		if local.Len() != Cap || local.Has("k00000") || !local.Has("newcomer") {
			t.Errorf("%s: %d entries, k00000 %v, newcomer %v; want only the oldest gone", name,
				local.Len(), local.Has("k00000"), local.Has("newcomer"))
		}
	}
	if dropped := log.Dropped(); !slices.Equal(dropped, []uint64{oldest}) {
		t.Errorf("dropped revisions %v, want %d (k00000)", dropped, oldest)
	}
}

// TestSharedRosterWritesRemovalsOfUnseenKeys: a removal is written to the
// log even for a key the local copy does not hold, since the announcement
// may not have reached it yet and must not outlive a later removal.
func TestSharedRosterWritesRemovalsOfUnseenKeys(t *testing.T) {
	log := rostertest.New()
	sr, _, _ := share(t, log)
	if err := sr.Unregister("k#s", make(chan struct{})); err != nil {
		t.Fatal(err)
	}
	if r, ok := log.Record("k#s"); !ok || r.Value != nil || log.Writes() != 1 {
		t.Fatalf("log after the removal: %+v (%v), %d writes; want one removal of k#s", r, ok, log.Writes())
	}
}

// TestSharedRosterSkipsRecordsThatAreNotAnnouncements: records in the log
// that no bus wrote are not listed, and each is warned about: the roster's
// JSON stays whole whatever another client of the log stored.
func TestSharedRosterSkipsRecordsThatAreNotAnnouncements(t *testing.T) {
	log := rostertest.New()
	_, local, logs := share(t, log)
	for _, v := range []string{"", "1700000000000", "1700000000000 ", "x 1", "1700000000000 {}", `1700000000000 "a":1}`,
		`1700000000000 "a":1,"b":[`, `01 "a":1`, `99999999999999999999 "a":1`, `-1 "a":1`} {
		if _, err := log.Put("junk "+v, []byte(v)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := log.Put("fine", rosterRecord(testEpoch, []byte(`"pubkey":"fine"`))); err != nil {
		t.Fatal(err)
	}
	if got, want := listing(t, local, testEpoch), `{"roster":[{"age_ms":0,"pubkey":"fine"}]}`; got != want {
		t.Fatalf("roster = %s, want %s", got, want)
	}
	if n := logs.count("roster record is not an announcement; ignored"); n != 10 {
		t.Errorf("%d warnings, want one per bad record", n)
	}
}

// TestSharedRosterExpiresByTheRecordsTime: a record refreshed three days
// ago is listed by no copy, and the next change prunes it on every copy
// alike, by the time the change carries rather than the local clock.
func TestSharedRosterExpiresByTheRecordsTime(t *testing.T) {
	log := rostertest.New()
	sr, local, _ := share(t, log)
	if _, err := log.Put("old", rosterRecord(testEpoch-retainMs, []byte(`"pubkey":"old"`))); err != nil {
		t.Fatal(err)
	}
	if got := listing(t, local, testEpoch); got != `{"roster":[]}` {
		t.Fatalf("roster with an expired entry: %s", got)
	}
	if err := sr.Announce(announcement(t, `{"pubkey":"new"}`), testEpoch, make(chan struct{})); err != nil {
		t.Fatal(err)
	}
	if local.Has("old") {
		t.Error("the expired entry was not pruned by the next announcement")
	}
}

func FuzzRosterRecord(f *testing.F) {
	for _, s := range []string{"", "0 ", `1700000000000 "a":1`, `1 "a":{"b":[1,2]},"c":"d"`, `01 "a":1`, "1 {}", `999999999999999999 "x":null`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, value []byte) {
		at, fields, ok := parseRosterRecord(value)
		if !ok {
			return
		}
		if at < 0 {
			t.Fatalf("%q: negative time %d", value, at)
		}
		if got := rosterRecord(at, fields); string(got) != string(value) {
			t.Fatalf("%q parses and re-encodes as %q", value, got)
		}
		if !json.Valid([]byte("{" + string(fields) + "}")) {
			t.Fatalf("%q: the fields are not an object's members", value)
		}
	})
}
