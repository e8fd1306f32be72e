package presence

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/interlink-go/interlink/internal/bus"
	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/relay"
	"github.com/interlink-go/interlink/internal/store"
	"github.com/interlink-go/interlink/internal/testutil"
)

var testInfo = identity.SessionInfo{SessionID: "s1", Cwd: "/src/interlink/cmd", GitRoot: "interlink"}

func TestRunAnnouncesAtOnce(t *testing.T) {
	b1, b2 := startBus(t), startBus(t)
	s := testutil.Signer(t, 1)
	// A dead relay must not hold up the others.
	dead := relay.New(closedURL(t), nil)
	a := New([]*relay.Client{dead, b1.client, b2.client}, s, "alpha", testInfo, &Options{Every: time.Hour})
	start(t, a)

	for i, b := range []*testBus{b1, b2} {
		waitFor(t, "the first announcement", func() bool { return len(entries(t, b.client)) == 1 })
		e := entries(t, b.client)[0]
		if e.Key != s.Public() || e.Name != "alpha" || e.Session != testInfo {
			t.Errorf("relay %d entry = %+v, want alpha with %+v", i, e, testInfo)
		}
	}
	if got := a.Info(); got != testInfo {
		t.Errorf("Info = %+v, want %+v", got, testInfo)
	}
}

func TestRunRepeats(t *testing.T) {
	b := startBus(t)
	a := New([]*relay.Client{b.client}, testutil.Signer(t, 1), "alpha", testInfo, &Options{Every: 20 * time.Millisecond})
	stop := start(t, a)
	waitFor(t, "three announcements", func() bool { return b.announces.Load() >= 3 })
	stop()
}

func TestSetSummary(t *testing.T) {
	b := startBus(t)
	a := New([]*relay.Client{b.client}, testutil.Signer(t, 1), "alpha", testInfo, &Options{Every: time.Hour})
	start(t, a)
	waitFor(t, "the first announcement", func() bool { return b.announces.Load() == 1 })

	if err := a.SetSummary("  fixing the parser \n"); err != nil {
		t.Fatalf("SetSummary: %v", err)
	}
	if got := a.Info().Summary; got != "fixing the parser" {
		t.Errorf("Info().Summary = %q, want the trimmed summary", got)
	}
	// With an hour between heartbeats, only SetSummary can cause this.
	waitFor(t, "the new summary on the roster", func() bool {
		e := entries(t, b.client)
		return len(e) == 1 && e[0].Session.Summary == "fixing the parser"
	})
	waitFor(t, "the second announcement counted", func() bool { return b.announces.Load() >= 2 })
	if n := b.announces.Load(); n != 2 {
		t.Errorf("announcements = %d, want 2", n)
	}
}

func TestSetSummaryLimit(t *testing.T) {
	a := New(nil, testutil.Signer(t, 1), "alpha", testInfo, nil)
	// Multi-byte characters: the limit counts characters, not bytes.
	ok := strings.Repeat("é", SummaryLimit)
	if err := a.SetSummary(" " + ok + " "); err != nil {
		t.Fatalf("SetSummary(%d characters): %v", SummaryLimit, err)
	}
	err := a.SetSummary(ok + "x")
	if !errors.Is(err, ErrSummaryTooLong) || !strings.Contains(err.Error(), "200") {
		t.Errorf("SetSummary(%d characters) = %v, want ErrSummaryTooLong naming the limit", SummaryLimit+1, err)
	}
	if got := a.Info().Summary; got != ok {
		t.Errorf("a refused summary replaced the old one: %q", got)
	}
}

func TestSetSummaryBeforeRun(t *testing.T) {
	b := startBus(t)
	a := New([]*relay.Client{b.client}, testutil.Signer(t, 1), "alpha", testInfo, &Options{Every: time.Hour})
	if err := a.SetSummary("early"); err != nil {
		t.Fatal(err)
	}
	start(t, a)
	waitFor(t, "the first announcement", func() bool { return b.announces.Load() == 1 })
	if e := entries(t, b.client); len(e) != 1 || e[0].Session.Summary != "early" {
		t.Errorf("roster = %+v, want the summary set before Run", e)
	}
}

// Unregister takes the session off the roster of every relay that
// answers, and once Run has returned nothing announces it again. The test
// runs in a bubble, on an in-memory bus, so that the quiet after Run is
// watched on the bubble's clock and synctest.Wait shows that nothing is
// left to run.
func TestUnregisterAfterRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const every = 20 * time.Millisecond
		st := store.NewMemory(nil)
		srv := bus.New(st, nil)
		defer func() { _ = st.Close() }()
		defer srv.Shutdown()
		var announces atomic.Int64
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			srv.ServeHTTP(w, r)
			if r.URL.Path == "/announce" {
				announces.Add(1)
			}
		})
		client := relay.New("http://bus.test", &relay.Options{HTTPClient: &http.Client{Transport: handlerTransport{h}}})
		dead := relay.New("http://dead.test", &relay.Options{HTTPClient: &http.Client{Transport: handlerTransport{}}})
		a := New([]*relay.Client{client, dead}, testutil.Signer(t, 1), "alpha", testInfo, &Options{Every: every})
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() {
			defer close(done)
			a.Run(ctx)
		}()
		time.Sleep(2*every + every/2)
		synctest.Wait()
		if n := announces.Load(); n < 2 {
			t.Fatalf("%d announcements in two periods, want at least 2", n)
		}
		cancel()
		<-done

		a.Unregister(t.Context())
		if e := entries(t, client); len(e) != 0 {
			t.Fatalf("roster after Unregister = %+v, want empty", e)
		}
		n := announces.Load()
		time.Sleep(5 * every)
		synctest.Wait()
		if e := entries(t, client); len(e) != 0 {
			t.Errorf("roster %v after Unregister = %+v, want empty", 5*every, e)
		}
		if m := announces.Load(); m != n {
			t.Errorf("%d announcements after Run returned", m-n)
		}
	})
}

// handlerTransport serves requests with its handler, without a socket;
// with none, every request fails as if nothing listened.
type handlerTransport struct{ h http.Handler }

func (t handlerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if t.h == nil {
		return nil, errors.New("connection refused (test)")
	}
	rec := httptest.NewRecorder()
	t.h.ServeHTTP(rec, r)
	return rec.Result(), nil
}

func TestRunStopsWithContext(t *testing.T) {
	a := New(nil, testutil.Signer(t, 1), "alpha", testInfo, nil)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		a.Run(ctx)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
}
