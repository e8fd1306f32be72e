package bus

import (
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/txtar"

	"github.com/interlink-go/interlink/internal/roster/rostertest"
	natsstore "github.com/interlink-go/interlink/internal/store/nats"
)

// newSharedHarness returns a harness on a fake store whose roster is kept
// in log.
func newSharedHarness(tb testing.TB, log *rostertest.Log) *harness {
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
			replayGolden(t, file, newSharedHarness(t, rostertest.New()))
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
	log := rostertest.New()
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
	log := rostertest.New()
	h := newSharedHarness(t, log)
	log.FailPuts(natsstore.ErrUnreachable)
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
