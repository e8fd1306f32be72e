package nats

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/interlink-go/interlink/internal/store"
	"github.com/interlink-go/interlink/internal/store/natstest"
)

// streamSeq numbers the streams tests create, so that stores opened on one
// server never share a stream by accident.
var streamSeq atomic.Int64

// openNATS opens a store on a new stream of srv and checks and closes it at
// cleanup.
func openNATS(tb testing.TB, srv *natstest.Server, opts *store.Options) *Store {
	tb.Helper()
	no := &Options{Stream: fmt.Sprintf("T%d", streamSeq.Add(1))}
	if opts != nil {
		no.Options = *opts
	}
	return openNATSWith(tb, srv, no)
}

// openNATSWith opens a store with opts, which name the stream, and checks
// and closes it at cleanup. The connection retries quickly, so tests that
// restart the server need not wait long.
func openNATSWith(tb testing.TB, srv *natstest.Server, opts *Options) *Store {
	tb.Helper()
	o := *opts
	o.Connect = append([]nats.Option{nats.ReconnectWait(20 * time.Millisecond)}, o.Connect...)
	s, err := Open(srv.URL(), &o)
	if err != nil {
		tb.Fatalf("Open: %v", err)
	}
	tb.Cleanup(func() { checkAndClose(tb, s) })
	return s
}

// check verifies, with what the server reports, that every subject of the
// stream is one that Subject makes, that no queue is over the cap, that
// the stream's settings still fit, and that no route turn is left taken. A
// closed store passes.
func (s *Store) check() error {
	if s.conn.closed.Load() {
		return nil
	}
	if n := s.turns.held(); n != 0 {
		return fmt.Errorf("%d route turns still taken", n)
	}
	ctx, cancel := s.conn.Request()
	defer cancel()
	info, err := s.stream.Info(ctx, jetstream.WithSubjectFilter(">"))
	if err != nil {
		return err
	}
	if ms := compareStreamConfig(info.Config, streamConfig(s.conn.name, s.cap, info.Config.Replicas, s.totalBytes.Load(), 0)); len(ms) > 0 {
		return &StreamConfigError{Stream: s.conn.name, Mismatches: ms}
	}
	for subject, n := range info.State.Subjects {
		if _, ok := Route(s.conn.name, subject); !ok {
			return fmt.Errorf("subject %q is not one of a route", subject)
		}
		if n > uint64(s.cap) {
			return fmt.Errorf("subject %q holds %d messages, cap %d", subject, n, s.cap)
		}
	}
	return nil
}

// jsClient connects to srv for a test that works on streams directly.
func jsClient(t *testing.T, srv *natstest.Server) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	nc, err := nats.Connect(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return nc, js
}

func TestNATSSubjectIsOneValidTokenPerRoute(t *testing.T) {
	long := strings.Repeat("é", 128) // 256 bytes
	routes := []string{"", "K#s", "K#s.x", "a.b.c", "*", ">", "K#*", "K#>", "a b\tc", "#", "K#s\x00x", "\x00", long, "☃.*>"}
	seen := make(map[string]string)
	for _, r := range routes {
		subject := Subject("S", r)
		token, ok := strings.CutPrefix(subject, "interlink.S.")
		if !ok {
			t.Fatalf("Subject(S, %q) = %q, not under interlink.S.", r, subject)
		}
		if token == "" || strings.ContainsAny(token, ".*> \t\r\n\x00") {
			t.Errorf("Subject(S, %q) has token %q, not a valid subject token", r, token)
		}
		if other, dup := seen[subject]; dup {
			t.Errorf("routes %q and %q share subject %q", r, other, subject)
		}
		seen[subject] = r
		if got, ok := Route("S", subject); !ok || got != r {
			t.Errorf("Route(S, %q) = %q, %v, want %q", subject, got, ok, r)
		}
		if _, ok := Route("T", subject); ok {
			t.Errorf("Route(T, %q) accepted a subject of stream S", subject)
		}
	}
	for _, subject := range []string{"", "interlink.S", "interlink.S.", "interlink.S.x", "interlink.S.rSw=", "interlink.S.rSx", "interlink.S.r!", "interlink.SS.rSw", "other.S.rSw"} {
		if r, ok := Route("S", subject); ok {
			t.Errorf("Route(S, %q) = %q, want no route", subject, r)
		}
	}
}

func FuzzNATSSubject(f *testing.F) {
	for _, seed := range []string{"", "K#s", "a.b", "*", ">", "interlink.S.rSw", "interlink.S.r", "interlink.S.rSx"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		subject := Subject("S", s)
		if got, ok := Route("S", subject); !ok || got != s {
			t.Fatalf("route %q: subject %q decodes to %q, %v", s, subject, got, ok)
		}
		if route, ok := Route("S", s); ok && Subject("S", route) != s {
			t.Fatalf("subject %q decodes to %q, which encodes to %q", s, route, Subject("S", route))
		}
	})
}

// Routes the bus accepts, including ones full of subject syntax, each keep a
// queue of their own on a real server.
func TestNATSRoutesWithSubjectSyntax(t *testing.T) {
	t.Parallel()
	s := openNATS(t, natstest.Start(t, nil), nil)
	routes := []string{"", "a.b", "*", ">", "K#*", "K# >", "a b", strings.Repeat("é", 128), "K#s.*.>"}
	for _, r := range routes {
		enqueue(t, s, r, "first "+r)
		enqueue(t, s, r, "second "+r)
	}
	for _, r := range routes {
		if n := depth(t, s, r); n != 2 {
			t.Errorf("Depth(%q) = %d, want 2", r, n)
		}
		_, got := drain(t, s, r)
		if diff := cmp.Diff([]string{"first " + r, "second " + r}, got); diff != "" {
			t.Errorf("route %q (-want +got):\n%s", r, diff)
		}
	}
}

// Two stores on one stream, as two bus processes would be: what one
// stores the other reads, deletes and counts, in order.
func TestNATSStoresShareOneStream(t *testing.T) {
	t.Parallel()
	srv := natstest.Start(t, nil)
	opts := &Options{Stream: "SHARED"}
	a := openNATSWith(t, srv, opts)
	b := openNATSWith(t, srv, opts)
	var keys []string
	for i := range 10 {
		k, _ := enqueue(t, a, "K#s", itoa(i))
		keys = append(keys, k)
	}
	if n := depth(t, b, "K#s"); n != 10 {
		t.Fatalf("Depth through b = %d, want 10", n)
	}
	gotKeys, got := drain(t, b, "K#s")
	if diff := cmp.Diff([]string{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"}, got); diff != "" {
		t.Fatalf("drained through b (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(keys, gotKeys); diff != "" {
		t.Fatalf("keys through b differ from a's (-a +b):\n%s", diff)
	}
	wantEmpty(t, a, "K#s")
}

// Whatever several processes do, the server keeps each queue at the cap
// and keeps the newest messages.
func TestNATSCapHeldAcrossStores(t *testing.T) {
	t.Parallel()
	const capacity, each = 16, 100
	srv := natstest.Start(t, nil)
	opts := &Options{Options: store.Options{Cap: capacity}, Stream: "CAPPED"}
	stores := []*Store{openNATSWith(t, srv, opts), openNATSWith(t, srv, opts)}
	var (
		mu   sync.Mutex
		keys []string
		wg   sync.WaitGroup
	)
	for i, s := range stores {
		wg.Go(func() {
			for j := range each {
				key, _, err := s.Enqueue("K#s", fmt.Appendf(nil, "%d/%d", i, j))
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				keys = append(keys, key)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	if n := depth(t, stores[0], "K#s"); n != capacity {
		t.Fatalf("Depth = %d, want %d", n, capacity)
	}
	sortBySeq(t, keys)
	got, _ := drain(t, stores[1], "K#s")
	if diff := cmp.Diff(keys[len(keys)-capacity:], got); diff != "" {
		t.Fatalf("survivors are not the newest %d (-want +got):\n%s", capacity, diff)
	}
}

func sortBySeq(tb testing.TB, keys []string) {
	tb.Helper()
	for i := 1; i < len(keys); i++ {
		for j := i; j > 0 && seqOf(tb, keys[j]) < seqOf(tb, keys[j-1]); j-- {
			keys[j], keys[j-1] = keys[j-1], keys[j]
		}
	}
}

// Every stored message also reaches core subscribers of the stream's
// subjects, with its route readable from the subject: one way for other
// processes to learn that a route has mail.
func TestNATSSendsReachCoreSubscribers(t *testing.T) {
	t.Parallel()
	srv := natstest.Start(t, nil)
	nc, _ := jsClient(t, srv)
	s := openNATSWith(t, srv, &Options{Stream: "WAKE"})
	got := make(chan *nats.Msg, 16)
	sub, err := nc.ChanSubscribe(Subjects("WAKE"), got)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	routes := []string{"K#a", "K#b.c", ""}
	for _, r := range routes {
		enqueue(t, s, r, "for "+r)
	}
	for _, want := range routes {
		select {
		case m := <-got:
			r, ok := Route("WAKE", m.Subject)
			if !ok || r != want || string(m.Data) != "for "+want {
				t.Fatalf("subscriber got %q on %q (route %q, %v), want %q", m.Data, m.Subject, r, ok, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no message for route %q", want)
		}
	}
}

// Keys and queues outlive the store that made them.
func TestNATSReopenKeepsQueuesAndKeys(t *testing.T) {
	t.Parallel()
	srv := natstest.Start(t, nil)
	opts := &Options{Stream: "KEEP"}
	s := openNATSWith(t, srv, opts)
	var keys []string
	for i := range 3 {
		k, _ := enqueue(t, s, "K#s", itoa(i))
		keys = append(keys, k)
	}
	checkAndClose(t, s)
	s = openNATSWith(t, srv, opts)
	k, _ := enqueue(t, s, "K#s", "3")
	if seqOf(t, k) <= seqOf(t, keys[2]) {
		t.Fatalf("key %q after reopening does not follow %q", k, keys[2])
	}
	gotKeys, got := drain(t, s, "K#s")
	if diff := cmp.Diff(append(keys, k), gotKeys); diff != "" {
		t.Fatalf("keys (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"0", "1", "2", "3"}, got); diff != "" {
		t.Fatalf("values (-want +got):\n%s", diff)
	}
}

// A stream the store makes again after it was removed starts its sequence
// at the clock, above the keys of the old one, so an old key deletes
// nothing new.
func TestNATSRecreatedStreamStartsAboveOldKeys(t *testing.T) {
	t.Parallel()
	srv := natstest.Start(t, nil)
	_, js := jsClient(t, srv)
	now := time.Unix(1_700_000_000, 0)
	opts := &Options{Options: store.Options{Now: func() time.Time { return now }}, Stream: "AGAIN"}
	s := openNATSWith(t, srv, opts)
	old, _ := enqueue(t, s, "K#s", "old")
	if want := store.Key("K#s", uint64(now.UnixNano())); old != want {
		t.Fatalf("first key = %q, want %q", old, want)
	}
	checkAndClose(t, s)
	if err := js.DeleteStream(t.Context(), "AGAIN"); err != nil {
		t.Fatal(err)
	}

	now = now.Add(time.Millisecond)
	s = openNATSWith(t, srv, opts)
	wantEmpty(t, s, "K#s")
	k, _ := enqueue(t, s, "K#s", "new")
	if seqOf(t, k) <= seqOf(t, old) {
		t.Fatalf("key %q of the new stream does not follow %q", k, old)
	}
	del(t, s, old)
	wantHead(t, s, "K#s", k, "new")
}

// The store rides out a server restart: calls fail fast while the server
// is away, the connection comes back by itself, and what was stored is
// still there.
func TestNATSServerRestart(t *testing.T) {
	t.Parallel()
	srv := natstest.Start(t, nil)
	s := openNATSWith(t, srv, &Options{Stream: "RESTART"})
	before, _ := enqueue(t, s, "K#s", "before")

	lost := s.conn.nc.StatusChanged(nats.RECONNECTING)
	srv.Shutdown()
	waitStatus(t, lost)
	if _, _, err := s.Enqueue("K#s", []byte("during")); !errors.Is(err, ErrUnreachable) {
		t.Fatalf("Enqueue while the server is down: %v, want ErrUnreachable", err)
	}
	if _, _, err := s.Peek("K#s"); !errors.Is(err, ErrUnreachable) {
		t.Fatalf("Peek while the server is down: %v, want ErrUnreachable", err)
	}

	back := s.conn.nc.StatusChanged(nats.CONNECTED)
	srv.Restart()
	waitStatus(t, back)
	after, _ := enqueue(t, s, "K#s", "after")
	gotKeys, got := drain(t, s, "K#s")
	if diff := cmp.Diff([]string{"before", "after"}, got); diff != "" {
		t.Fatalf("values after the restart (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{before, after}, gotKeys); diff != "" {
		t.Fatalf("keys after the restart (-want +got):\n%s", diff)
	}
}

// waitStatus waits for the connection status that ch was made to report.
func waitStatus(t *testing.T, ch <-chan nats.Status) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(30 * time.Second):
		t.Fatal("connection status did not change within 30 s")
	}
}

func TestOpenNATSUnreachable(t *testing.T) {
	t.Parallel()
	srv := natstest.Start(t, nil)
	url := srv.URL()
	srv.Shutdown()
	_, err := Open(url, &Options{Timeout: 2 * time.Second})
	if !errors.Is(err, ErrUnreachable) {
		t.Fatalf("Open of a stopped server: %v, want ErrUnreachable", err)
	}
	if !strings.Contains(err.Error(), url) || !strings.Contains(err.Error(), "nats-server is running") {
		t.Fatalf("error %q does not name the URL and what to check", err)
	}
}

func TestOpenNATSWithoutJetStream(t *testing.T) {
	t.Parallel()
	srv := natstest.Start(t, &natstest.Options{NoJetStream: true})
	_, err := Open(srv.URL(), nil)
	if !errors.Is(err, ErrNoJetStream) || errors.Is(err, ErrUnreachable) {
		t.Fatalf("Open without JetStream: %v, want ErrNoJetStream", err)
	}
	if !strings.Contains(err.Error(), "-js") {
		t.Fatalf("error %q does not say how to turn JetStream on", err)
	}
}

func TestOpenNATSPasswordInURL(t *testing.T) {
	t.Parallel()
	srv := natstest.Start(t, &natstest.Options{User: "bus", Password: "s3cret-pw"})
	s, err := Open(srv.UserURL("bus", "s3cret-pw"), &Options{Stream: "AUTH"})
	if err != nil {
		t.Fatalf("Open with the password in the URL: %v", err)
	}
	enqueue(t, s, "K#s", "x")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	_, err = Open(srv.UserURL("bus", "wrong-pw"), &Options{Stream: "AUTH"})
	if err == nil || errors.Is(err, ErrUnreachable) {
		t.Fatalf("Open with a wrong password: %v, want an authorization error", err)
	}
	if !errors.Is(err, nats.ErrAuthorization) {
		t.Fatalf("Open with a wrong password: %v, want one wrapping nats.ErrAuthorization", err)
	}
	if strings.Contains(err.Error(), "wrong-pw") {
		t.Fatalf("error %q shows the password", err)
	}
}

func TestOpenNATSStreamMismatch(t *testing.T) {
	t.Parallel()
	srv := natstest.Start(t, nil)
	_, js := jsClient(t, srv)
	s := openNATSWith(t, srv, &Options{Options: store.Options{Cap: 10}, Stream: "FIXED"})
	enqueue(t, s, "K#s", "kept")

	_, err := Open(srv.URL(), &Options{Options: store.Options{Cap: 20}, Stream: "FIXED"})
	var ce *StreamConfigError
	if !errors.As(err, &ce) || !errors.Is(err, ErrStreamConfig) {
		t.Fatalf("Open with another cap: %v, want a StreamConfigError", err)
	}
	want := []ConfigMismatch{{Field: "max_msgs_per_subject", Have: "10", Want: "20"}}
	if diff := cmp.Diff(want, ce.Mismatches); diff != "" {
		t.Fatalf("mismatches (-want +got):\n%s", diff)
	}
	if !strings.Contains(err.Error(), "nats stream edit FIXED") {
		t.Fatalf("error %q does not say what to do", err)
	}
	wantHead(t, s, "K#s", "", "kept")

	// A stream someone else made, unfit in several ways.
	if _, err := js.CreateStream(t.Context(), jetstream.StreamConfig{
		Name:       "OTHER",
		Subjects:   []string{Subjects("OTHER")},
		Retention:  jetstream.WorkQueuePolicy,
		MaxAge:     time.Hour,
		DenyDelete: true,
		Storage:    jetstream.MemoryStorage,
	}); err != nil {
		t.Fatal(err)
	}
	_, err = Open(srv.URL(), &Options{Stream: "OTHER"})
	if !errors.As(err, &ce) {
		t.Fatalf("Open of an unfit stream: %v, want a StreamConfigError", err)
	}
	var fields []string
	for _, m := range ce.Mismatches {
		fields = append(fields, m.Field)
	}
	if diff := cmp.Diff([]string{"retention", "storage", "max_msgs_per_subject", "discard", "max_bytes", "max_age", "deny_delete"}, fields); diff != "" {
		t.Fatalf("mismatched fields (-want +got):\n%s", diff)
	}

	// A stream that already takes the subjects the store's would.
	if _, err := js.CreateStream(t.Context(), jetstream.StreamConfig{Name: "GREEDY", Subjects: []string{"interlink.NEW.>"}}); err != nil {
		t.Fatal(err)
	}
	_, err = Open(srv.URL(), &Options{Stream: "NEW"})
	if !errors.As(err, &ce) || ce.Overlap == "" {
		t.Fatalf("Open with overlapping subjects: %v, want a StreamConfigError naming the overlap", err)
	}
}

func TestOpenNATSBadOptions(t *testing.T) {
	t.Parallel()
	srv := natstest.Start(t, nil)
	for _, tc := range []struct {
		name string
		opts Options
		want string
	}{
		{"dot in stream", Options{Stream: "A.B"}, "only letters"},
		{"space in stream", Options{Stream: "A B"}, "only letters"},
		{"wildcard stream", Options{Stream: "*"}, "only letters"},
		{"long stream", Options{Stream: strings.Repeat("S", 65)}, "1 to 64"},
		{"negative replicas", Options{Replicas: -1}, "replicas"},
		{"six replicas", Options{Replicas: 6}, "replicas"},
		{"more replicas than servers", Options{Stream: "R3", Replicas: 3}, "replicas"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Open(srv.URL(), &tc.opts)
			if err == nil {
				s.Close()
				t.Fatal("Open succeeded")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q does not mention %q", err, tc.want)
			}
		})
	}
}

// Calls that race Close fail with store.ErrClosed, not with an error of the
// connection Close tears down.
func TestNATSCallsRacingCloseGetErrClosed(t *testing.T) {
	t.Parallel()
	s := openNATS(t, natstest.Start(t, nil), nil)
	errs := make(chan error, 1)
	started := make(chan struct{})
	go func() {
		for i := 0; ; i++ {
			if i == 1 {
				close(started)
			}
			if _, _, err := s.Enqueue("K#s", []byte("x")); err != nil {
				errs <- err
				return
			}
		}
	}()
	<-started
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-errs; !errors.Is(err, store.ErrClosed) {
		t.Fatalf("Enqueue racing Close: %v, want store.ErrClosed", err)
	}
}

// Peek remembers which route a sequence is on, so the Delete of a peeked
// key skips a request; a key that pairs that sequence with another route
// still deletes nothing.
func TestNATSDeleteOfPeekedSequenceChecksRoute(t *testing.T) {
	t.Parallel()
	s := openNATS(t, natstest.Start(t, nil), nil)
	ka, _ := enqueue(t, s, "K#a", "for a")
	enqueue(t, s, "K#b", "for b")
	wantHead(t, s, "K#a", ka, "for a")
	del(t, s, store.Key("K#b", seqOf(t, ka)))
	wantHead(t, s, "K#a", ka, "for a")
	wantHead(t, s, "K#b", "", "for b")
	del(t, s, ka)
	if s.peeked.is(seqOf(t, ka), "K#a") {
		t.Fatal("the deleted sequence is still remembered")
	}
	del(t, s, ka)
	wantEmpty(t, s, "K#a")
	wantHead(t, s, "K#b", "", "for b")
}

// Deleting a peeked key whose message the cap has dropped since deletes
// nothing and is no error, as for any absent key.
func TestNATSDeleteOfPeekedKeyDroppedByCap(t *testing.T) {
	t.Parallel()
	s := openNATS(t, natstest.Start(t, nil), &store.Options{Cap: 1})
	old, _ := enqueue(t, s, "K#s", "old")
	wantHead(t, s, "K#s", old, "old")
	head, dropped := enqueue(t, s, "K#s", "new")
	if dropped != 1 {
		t.Fatalf("dropped = %d, want 1", dropped)
	}
	del(t, s, old)
	wantHead(t, s, "K#s", head, "new")
	if s.peeked.is(seqOf(t, old), "K#s") {
		t.Fatal("the dropped sequence is still remembered")
	}
}

func TestSeqRoutesKeepsTheNewest(t *testing.T) {
	var r seqRoutes
	const n = 3 * seqRoutesMax
	for seq := range uint64(n) {
		r.add(seq, fmt.Sprint("K#", seq%7))
		r.add(seq, "K#again") // a second Peek of the same entry changes nothing
	}
	if got := r.len(); got != seqRoutesMax {
		t.Fatalf("remembers %d sequences, want %d", got, seqRoutesMax)
	}
	for _, seq := range []uint64{0, n - seqRoutesMax - 1} {
		if r.is(seq, fmt.Sprint("K#", seq%7)) {
			t.Errorf("sequence %d, among the oldest, is still remembered", seq)
		}
	}
	for _, seq := range []uint64{n - seqRoutesMax, n - 1} {
		if !r.is(seq, fmt.Sprint("K#", seq%7)) {
			t.Errorf("sequence %d, among the newest, is forgotten", seq)
		}
		if r.is(seq, "K#again") {
			t.Errorf("sequence %d moved to another route", seq)
		}
	}
	r.forget(n - 1)
	if r.is(n-1, fmt.Sprint("K#", (n-1)%7)) || r.len() != seqRoutesMax-1 {
		t.Fatal("forget left the sequence in place")
	}
}
