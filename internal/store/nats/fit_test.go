package nats

import (
	"bytes"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/interlink-go/interlink/internal/store"
	"github.com/interlink-go/interlink/internal/store/natstest"
	"github.com/interlink-go/interlink/internal/testutil"
)

// Tests of a NATS server and streams with settings the store did not
// choose: the server's max_payload, streams made by older stores or by
// other processes with other bounds.

// lockedBuffer is a log destination that the store's goroutines and the
// test may use at once.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// A server's max_payload sets the longest value the store takes: a
// value of exactly that length is stored and read back whole, one byte
// more is refused with a store.BoundError naming the limit and leaves nothing
// behind. A caller that needs more than the server leaves cannot open.
func TestNATSValueLimitFollowsMaxPayload(t *testing.T) {
	t.Parallel()
	for _, payload := range []int32{natstest.StockMaxPayload, 64 << 10} {
		t.Run(strconv.Itoa(int(payload)), func(t *testing.T) {
			t.Parallel()
			srv := natstest.Start(t, &natstest.Options{MaxPayload: payload})
			s := openNATS(t, srv, nil)
			limit := s.MaxValue()
			if want := int64(payload) - originHeaderBytes; limit != want {
				t.Fatalf("MaxValue() = %d, want %d", limit, want)
			}
			if s.MaxPayload() != int64(payload) || MinPayload(int(limit)) != int64(payload) {
				t.Fatalf("MaxPayload() = %d, MinPayload(%d) = %d; want both %d", s.MaxPayload(), limit, MinPayload(int(limit)), payload)
			}

			full := strings.Repeat("v", int(limit))
			enqueue(t, s, "K#s", full)
			wantHead(t, s, "K#s", "", full)
			drain(t, s, "K#s")

			_, _, err := s.Enqueue("K#s", []byte(full+"v"))
			be, ok := errors.AsType[*store.BoundError](err)
			if !ok || !errors.Is(err, store.ErrPayloadLimit) || be.Bound != limit || be.Size != limit+1 {
				t.Fatalf("Enqueue of %d bytes: %v, want a store.BoundError of store.ErrPayloadLimit with bound %d", limit+1, err, limit)
			}
			if !strings.Contains(err.Error(), strconv.FormatInt(limit, 10)) {
				t.Errorf("error %q does not name the limit", err)
			}
			wantEmpty(t, s, "K#s")

			_, err = Open(srv.URL(), &Options{Stream: s.conn.name, MinValue: int(limit) + 1})
			if !errors.Is(err, store.ErrPayloadLimit) || !strings.Contains(err.Error(), "max_payload") ||
				!strings.Contains(err.Error(), strconv.FormatInt(int64(payload)+1, 10)) {
				t.Fatalf("Open needing one byte more than the server leaves: %v, want store.ErrPayloadLimit naming max_payload and %d", err, payload+1)
			}
		})
	}
}

// olderStreamConfig is the stream a store made before the stores bounded
// their total bytes: no max_bytes, the oldest messages discarded, and no
// direct gets.
func olderStreamConfig(name string, capacity int) jetstream.StreamConfig {
	c := streamConfig(name, capacity, 1, -1, 0)
	c.Discard = jetstream.DiscardOld
	c.AllowDirect = false
	return c
}

// A stream an older store made is brought up to date in place: discard
// new, the store's max_bytes and direct gets, with every queued message
// kept in order.
// The log says what changed.
func TestOpenNATSUpdatesTheStreamOfAnOlderStore(t *testing.T) {
	t.Parallel()
	srv := natstest.Start(t, nil)
	_, js := jsClient(t, srv)
	if _, err := js.CreateStream(t.Context(), olderStreamConfig("OLD", store.DefaultCap)); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, err := js.Publish(t.Context(), Subject("OLD", "K#s"), []byte("queued "+strconv.Itoa(i))); err != nil {
			t.Fatal(err)
		}
	}

	var logs lockedBuffer
	s := openNATSWith(t, srv, &Options{Stream: "OLD", Options: store.Options{TotalBytes: 4 << 20, Logger: slog.New(slog.NewTextHandler(&logs, nil))}})
	info, err := s.stream.Info(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if info.Config.Discard != jetstream.DiscardNew || info.Config.MaxBytes != 4<<20 || !info.Config.AllowDirect {
		t.Fatalf("stream after open: discard %v, max_bytes %d, allow_direct %v; want new, %d and true", info.Config.Discard, info.Config.MaxBytes, info.Config.AllowDirect, 4<<20)
	}
	if s.TotalBytes() != 4<<20 {
		t.Errorf("TotalBytes() = %d, want %d", s.TotalBytes(), 4<<20)
	}
	if _, values := drain(t, s, "K#s"); !cmp.Equal(values, []string{"queued 0", "queued 1", "queued 2"}) {
		t.Errorf("queued messages after the update: %q", values)
	}
	if !strings.Contains(logs.String(), `msg="stream brought up to date" stream=OLD changed="discard DiscardOld -> DiscardNew, max_bytes unlimited -> 4194304, allow_direct false -> true"`) {
		t.Errorf("the log does not say what changed:\n%s", logs.String())
	}
}

// A stream that holds more than the store's total keeps every message
// when its max_bytes is lowered to the total: sends are refused until
// enough is acknowledged, and then taken again.
func TestOpenNATSLowersMaxBytesWithoutLosingMessages(t *testing.T) {
	t.Parallel()
	srv := natstest.Start(t, nil)
	_, js := jsClient(t, srv)
	if _, err := js.CreateStream(t.Context(), olderStreamConfig("HELD", store.DefaultCap)); err != nil {
		t.Fatal(err)
	}
	value := strings.Repeat("x", 64<<10)
	const held = 8
	for range held {
		if _, err := js.Publish(t.Context(), Subject("HELD", "K#s"), []byte(value)); err != nil {
			t.Fatal(err)
		}
	}
	total := int64(3 * len(value))
	s := openNATSWith(t, srv, &Options{Stream: "HELD", Options: store.Options{TotalBytes: total}})
	if n := depth(t, s, "K#s"); n != held {
		t.Fatalf("depth after lowering max_bytes: %d, want %d", n, held)
	}
	if _, _, err := s.Enqueue("K#t", []byte("new")); !errors.Is(err, store.ErrFull) {
		t.Fatalf("Enqueue into a stream over its max_bytes: %v, want store.ErrFull", err)
	}
	for range held {
		e, _ := peek(t, s, "K#s")
		if err := s.Delete(e.Key); err != nil {
			t.Fatal(err)
		}
	}
	enqueue(t, s, "K#t", "new")
}

// Processes on one stream with different totals: the smallest wins. A
// process with a smaller total lowers the stream's max_bytes; one with a
// larger total keeps the stream's and takes it as its own, and says so; a
// process that started with the larger total learns the lower one when
// the server refuses a publish for it.
func TestNATSStreamTotalSmallestWins(t *testing.T) {
	t.Parallel()
	srv := natstest.Start(t, nil)
	const big, small, bigger = 8 << 20, 4 << 20, 16 << 20
	opts := func(total int64, logs *lockedBuffer) *Options {
		o := &Options{Stream: "TOTALS", Options: store.Options{TotalBytes: total}, LongestValue: 2 << 20}
		if logs != nil {
			o.Logger = slog.New(slog.NewTextHandler(logs, nil))
		}
		return o
	}
	a, err := Open(srv.URL(), opts(big, nil))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b := openNATSWith(t, srv, opts(small, nil))
	var logs lockedBuffer
	c := openNATSWith(t, srv, opts(bigger, &logs))
	for name, s := range map[string]*Store{"b": b, "c": c} {
		if s.TotalBytes() != small {
			t.Errorf("%s: TotalBytes() = %d, want the smallest, %d", name, s.TotalBytes(), small)
		}
	}
	info, err := c.stream.Info(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if info.Config.MaxBytes != small {
		t.Fatalf("stream max_bytes = %d, want %d", info.Config.MaxBytes, small)
	}
	if !strings.Contains(logs.String(), `msg="the stream keeps a lower total than this bus's; it applies" stream=TOTALS max_bytes=4194304 total_bytes=16777216`) {
		t.Errorf("the process with the larger total does not say the smaller applies:\n%s", logs.String())
	}

	// a still thinks 8 MiB until the server refuses it.
	value := []byte(strings.Repeat("y", 1<<20))
	var refused error
	for range 8 {
		if _, _, refused = a.Enqueue("K#fill", value); refused != nil {
			break
		}
	}
	be, ok := errors.AsType[*store.BoundError](refused)
	if !ok || !errors.Is(refused, store.ErrFull) || be.Bound != small || a.TotalBytes() != small {
		t.Fatalf("a filling the stream: %v (TotalBytes %d), want store.ErrFull with the bound %d", refused, a.TotalBytes(), small)
	}
}

// What the store cannot change safely still stops the open, and the
// stream is left as it was: a max_bytes too small for one message, a
// different per-route cap (lowering it would drop queued messages), and
// any setting of a stream a store did not make.
func TestOpenNATSRefusesWhatItCannotChange(t *testing.T) {
	t.Parallel()
	srv := natstest.Start(t, nil)
	_, js := jsClient(t, srv)
	tiny := streamConfig("TINY", store.DefaultCap, 1, 16<<10, 0)
	foreign := olderStreamConfig("FOREIGN", store.DefaultCap)
	foreign.Description = "someone else's"
	cap10 := olderStreamConfig("CAP", 10)
	for _, c := range []jetstream.StreamConfig{tiny, foreign, cap10} {
		if _, err := js.CreateStream(t.Context(), c); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		stream string
		want   []ConfigMismatch
	}{
		{"TINY", []ConfigMismatch{{Field: "max_bytes", Have: "16384", Want: "134217728 (or at least 8388480, the longest message)"}}},
		{"FOREIGN", []ConfigMismatch{{Field: "discard", Have: "DiscardOld", Want: "DiscardNew"}, {Field: "max_bytes", Have: "unlimited", Want: "134217728"}}},
		{"CAP", []ConfigMismatch{{Field: "max_msgs_per_subject", Have: "10", Want: "1024"}}},
	} {
		t.Run(c.stream, func(t *testing.T) {
			before, err := js.Stream(t.Context(), c.stream)
			if err != nil {
				t.Fatal(err)
			}
			_, err = Open(srv.URL(), &Options{Stream: c.stream})
			ce, ok := errors.AsType[*StreamConfigError](err)
			if !ok {
				t.Fatalf("Open: %v, want a StreamConfigError", err)
			}
			if diff := cmp.Diff(c.want, ce.Mismatches); diff != "" {
				t.Errorf("mismatches (-want +got):\n%s", diff)
			}
			after, err := js.Stream(t.Context(), c.stream)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(before.CachedInfo().Config, after.CachedInfo().Config); diff != "" {
				t.Errorf("the refused open changed the stream (-before +after):\n%s", diff)
			}
		})
	}
}

// Processes on one stream through servers of one cluster with different
// max_payload: each takes what its own server takes, and each reads and
// deletes every message, whichever server it came through; the servers
// apply max_payload only to what clients publish.
func TestNATSClusterServersWithDifferentMaxPayload(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a cluster of two")
	}
	c := natstest.StartCluster(t, 2, &natstest.ClusterOptions{MaxPayloads: []int32{natstest.DefaultMaxPayload, natstest.StockMaxPayload}})
	open := func(srv *natstest.Server) *Store {
		t.Helper()
		var s *Store
		// A cluster may take up to a minute to carry on after a change.
		testutil.EventuallyNil(t, time.Minute, "Open", func() (err error) {
			s, err = Open(srv.URL(), &Options{Stream: "MIXED"})
			return err
		})
		t.Cleanup(func() { s.Close() })
		return s
	}
	big, small := open(c.Servers[0]), open(c.Servers[1])
	if big.MaxValue() <= small.MaxValue() || small.MaxValue() != natstest.StockMaxPayload-originHeaderBytes {
		t.Fatalf("MaxValue: %d through the large server, %d through the stock one", big.MaxValue(), small.MaxValue())
	}
	large := strings.Repeat("L", int(small.MaxValue())+1<<19)
	if _, _, err := small.Enqueue("K#s", []byte(large)); !errors.Is(err, store.ErrPayloadLimit) {
		t.Fatalf("Enqueue through the stock server: %v, want store.ErrPayloadLimit", err)
	}
	enqueue(t, big, "K#s", large)
	wantHead(t, small, "K#s", "", large)
	e, _ := peek(t, small, "K#s")
	if err := small.Delete(e.Key); err != nil {
		t.Fatal(err)
	}
	wantEmpty(t, big, "K#s")
}
