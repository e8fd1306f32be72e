package bus

import (
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

// memLog is a [roster.Log] in memory that applies every change to every
// watch at once, in one order, as a JetStream bucket does more slowly.
type memLog struct {
	mu      sync.Mutex
	rev     uint64                               // guarded by mu
	records map[string]memRecord                 // guarded by mu; the last of each key
	watches map[int]func(uint64, string, []byte) // guarded by mu
	nextID  int                                  // guarded by mu
	putErr  error                                // guarded by mu; returned by Put when set
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
