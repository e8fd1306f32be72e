package bus

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/txtar"

	natsstore "github.com/interlink-go/interlink/internal/store/nats"
)

// memLog is a [RosterLog] in memory that applies every change to every
// watch at once, in one order, as a JetStream bucket does more slowly.
type memLog struct {
	mu      sync.Mutex
	rev     uint64                               // guarded by mu
	records map[string]memRecord                 // guarded by mu; the last of each key
	watches map[int]func(uint64, string, []byte) // guarded by mu
	nextID  int                                  // guarded by mu
	putErr  error                                // guarded by mu; returned by Put when set
	writes  int                                  // guarded by mu; Put and Delete calls that changed the log
	dropped []uint64                             // guarded by mu; what Drop removed
}

type memRecord struct {
	rev   uint64
	value []byte // nil: a removal
}

func newMemLog() *memLog {
	return &memLog{records: make(map[string]memRecord), watches: make(map[int]func(uint64, string, []byte))}
}

func (l *memLog) write(key string, value []byte) uint64 {
	l.rev++
	l.writes++
	l.records[key] = memRecord{rev: l.rev, value: value}
	for _, apply := range l.watches {
		apply(l.rev, key, value)
	}
	return l.rev
}

func (l *memLog) Put(key string, value []byte) (uint64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.putErr != nil {
		return 0, l.putErr
	}
	return l.write(key, append(make([]byte, 0, len(value)), value...)), nil
}

func (l *memLog) Delete(key string) (uint64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.write(key, nil), nil
}

func (l *memLog) Drop(rev uint64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for k, r := range l.records {
		if r.rev == rev {
			delete(l.records, k)
			l.dropped = append(l.dropped, rev)
		}
	}
	return nil
}

func (l *memLog) Watch(apply func(uint64, string, []byte)) func() {
	l.mu.Lock()
	defer l.mu.Unlock()
	keys := make([]string, 0, len(l.records))
	for k := range l.records {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int { return int(l.records[a].rev) - int(l.records[b].rev) })
	for _, k := range keys {
		apply(l.records[k].rev, k, l.records[k].value)
	}
	id := l.nextID
	l.nextID++
	l.watches[id] = apply
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		delete(l.watches, id)
	}
}

// newSharedHarness returns a harness on a fake store whose roster is kept
// in log.
func newSharedHarness(tb testing.TB, log *memLog) *harness {
	tb.Helper()
	st := newFakeStore(0)
	h := &harness{tb: tb, st: st, clock: newFakeClock(), logs: &logRecorder{}}
	h.srv = New(st, &Options{Logger: slog.New(h.logs), Now: h.clock.Now, RosterLog: log})
	tb.Cleanup(func() { st.Close() })
	tb.Cleanup(h.srv.Shutdown)
	return h
}

// rosterBody returns the /roster answer.
func (h *harness) rosterBody() string {
	h.tb.Helper()
	rec := h.do(http.MethodGet, "/roster", "")
	if rec.Code != http.StatusOK {
		h.tb.Fatalf("roster: %d %s", rec.Code, rec.Body)
	}
	return rec.Body.String()
}

// The golden exchanges answer byte for byte the same when the roster is
// kept in a shared log.
func TestSharedRosterAnswersTheGoldenExchanges(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "golden", "*.txtar"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden files: %v", err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			replayGolden(t, file, newSharedHarness(t, newMemLog()))
		})
	}
}

// replayGolden serves the requests of the golden file against h and
// compares every answer with the file's, as TestG1Golden does.
func replayGolden(t *testing.T, file string, h *harness) {
	t.Helper()
	ar, err := txtar.ParseFile(file)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for _, f := range ar.Files {
		if strings.HasSuffix(f.Name, ".response") {
			want[f.Name] = string(f.Data)
		}
	}
	for _, f := range ar.Files {
		step, kind, _ := strings.Cut(f.Name, ".")
		switch kind {
		case "advance":
			d, err := time.ParseDuration(strings.TrimSpace(string(f.Data)))
			if err != nil {
				t.Fatal(err)
			}
			h.clock.Add(d)
		case "request":
			got := string(formatResponse(h.srv, parseRequest(t, f.Name, f.Data)))
			if w := want[step+".response"]; got != w {
				t.Errorf("%s:\n--- want\n%s--- got\n%s", f.Name, w, got)
			}
		}
	}
}

// Buses on one log list the same roster, whichever bus each change went
// through, and a bus that starts later lists it too.
func TestSharedRosterIsTheSameOnEveryBus(t *testing.T) {
	log := newMemLog()
	a, b := newSharedHarness(t, log), newSharedHarness(t, log)
	a.announce(`{"pubkey":"k1","session":{"session_id":"s"},"name":"one"}`)
	b.announce(`{"pubkey":"k2","name":"two"}`)
	a.clock.Add(time.Second)
	b.clock.Add(time.Second)
	b.announce(`{"pubkey":"k1","session":{"session_id":"s"},"name":"one, again"}`)
	a.announce(`{"pubkey":"k3"}`)
	if rec := b.do(http.MethodPost, "/unregister", `{"pubkey":"k3"}`); rec.Code != http.StatusAccepted {
		t.Fatalf("unregister: %d %s", rec.Code, rec.Body)
	}
	want := `{"roster":[{"age_ms":0,"name":"one, again","pubkey":"k1","session":{"session_id":"s"}},{"age_ms":1000,"name":"two","pubkey":"k2"}]}`
	for name, h := range map[string]*harness{"a": a, "b": b} {
		if got := h.rosterBody(); got != want {
			t.Errorf("roster of %s:\n got %s\nwant %s", name, got, want)
		}
	}
	c := newSharedHarness(t, log)
	c.clock.Add(time.Second)
	if got := c.rosterBody(); got != want {
		t.Errorf("roster of a later bus:\n got %s\nwant %s", got, want)
	}
}

// When the roster is full, every bus lets the same entry give way, the one
// refreshed longest ago, and the bus that wrote the newcomer drops it from
// the log, so that a bus starting later does not list it either.
func TestSharedRosterEvictsAlikeOnEveryBus(t *testing.T) {
	log := newMemLog()
	a, b := newSharedHarness(t, log), newSharedHarness(t, log)
	for i := range RosterCap {
		h := a
		if i%2 == 1 {
			h = b
		}
		h.announce(fmt.Sprintf(`{"pubkey":"k%04d"}`, i))
	}
	// k0000 refreshes, so k0001 is now the oldest.
	b.announce(`{"pubkey":"k0000"}`)
	log.mu.Lock()
	oldest := log.records["k0001"].rev
	log.mu.Unlock()
	a.announce(`{"pubkey":"newcomer"}`)

	later := newSharedHarness(t, log)
	for name, h := range map[string]*harness{"a": a, "b": b, "later": later} {
		if n := h.srv.roster.len(); n != RosterCap {
			t.Errorf("%s holds %d entries, want %d", name, n, RosterCap)
		}
		if h.srv.roster.has("k0001") || !h.srv.roster.has("newcomer") || !h.srv.roster.has("k0000") {
			t.Errorf("%s: k0001 listed %v, newcomer %v, k0000 %v; want only the oldest gone", name,
				h.srv.roster.has("k0001"), h.srv.roster.has("newcomer"), h.srv.roster.has("k0000"))
		}
	}
	if a.rosterBody() != b.rosterBody() || b.rosterBody() != later.rosterBody() {
		t.Error("the buses list different rosters")
	}
	log.mu.Lock()
	defer log.mu.Unlock()
	if !slices.Equal(log.dropped, []uint64{oldest}) {
		t.Errorf("dropped revisions %v, want %d (k0001)", log.dropped, oldest)
	}
}

// A log that fails makes /announce answer 500, and the roster stays as it
// was.
func TestSharedRosterFailingLog(t *testing.T) {
	log := newMemLog()
	h := newSharedHarness(t, log)
	log.mu.Lock()
	log.putErr = natsstore.ErrUnreachable
	log.mu.Unlock()
	rec := h.do(http.MethodPost, "/announce", `{"pubkey":"k"}`)
	if rec.Code != http.StatusInternalServerError || rec.Body.String() != `{"error":"storage error"}` {
		t.Fatalf("announce with a failing log: %d %s", rec.Code, rec.Body)
	}
	if got := h.rosterBody(); got != `{"roster":[]}` {
		t.Fatalf("roster after a failed announcement: %s", got)
	}
	if len(h.logs.find("announce failed")) != 1 {
		t.Error("the failure was not logged")
	}
}

// A removal is written to the log even for a key this bus has not seen:
// the announcement may have gone through another bus and not have reached
// this one yet, and must not outlive a removal made after it.
func TestSharedRosterWritesRemovalsOfUnseenKeys(t *testing.T) {
	log := newMemLog()
	h := newSharedHarness(t, log)
	if rec := h.do(http.MethodPost, "/unregister", `{"pubkey":"k","session":{"session_id":"s"}}`); rec.Code != http.StatusAccepted {
		t.Fatalf("unregister: %d", rec.Code)
	}
	log.mu.Lock()
	defer log.mu.Unlock()
	if r, ok := log.records["k#s"]; !ok || r.value != nil || log.writes != 1 {
		t.Fatalf("log after the removal: %+v (%v), %d writes; want one removal of k#s", r, ok, log.writes)
	}
}

// Records in the log that no bus wrote are not listed: the roster's JSON
// stays whole whatever another client of the log stored.
func TestSharedRosterSkipsRecordsThatAreNotAnnouncements(t *testing.T) {
	log := newMemLog()
	h := newSharedHarness(t, log)
	for _, v := range []string{"", "1700000000000", "1700000000000 ", "x 1", "1700000000000 {}", `1700000000000 "a":1}`,
		`1700000000000 "a":1,"b":[`, `01 "a":1`, `99999999999999999999 "a":1`, `-1 "a":1`} {
		if _, err := log.Put("junk "+v, []byte(v)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := log.Put("fine", rosterRecord(testEpoch, []byte(`"pubkey":"fine"`))); err != nil {
		t.Fatal(err)
	}
	if got, want := h.rosterBody(), `{"roster":[{"age_ms":0,"pubkey":"fine"}]}`; got != want {
		t.Fatalf("roster = %s, want %s", got, want)
	}
	if n := len(h.logs.find("roster record is not an announcement; ignored")); n != 10 {
		t.Errorf("%d warnings, want one per bad record", n)
	}
}

// A record refreshed three days ago is listed by no bus, and the next
// change prunes it on every bus alike.
func TestSharedRosterExpiresByTheRecordsTime(t *testing.T) {
	log := newMemLog()
	h := newSharedHarness(t, log)
	if _, err := log.Put("old", rosterRecord(testEpoch-rosterRetainMs, []byte(`"pubkey":"old"`))); err != nil {
		t.Fatal(err)
	}
	if got := h.rosterBody(); got != `{"roster":[]}` {
		t.Fatalf("roster with an expired entry: %s", got)
	}
	h.announce(`{"pubkey":"new"}`)
	if h.srv.roster.has("old") {
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
