package store

import (
	"errors"
	"strconv"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/interlink-go/interlink/internal/store/natstest"
)

// Several processes on one stream share one total: the server checks it as
// it stores each message, whichever process sends. Sending from two stores
// at once never takes the stream past it, both are refused once it is
// full, and a delete through either makes room for both.
func TestNATSTotalBytesHeldAcrossStores(t *testing.T) {
	t.Parallel()
	const total = 20_000
	srv := natstest.Start(t, nil)
	opts := &NATSOptions{Options: Options{TotalBytes: total}, Stream: "FULL"}
	stores := []*NATS{openNATSWith(t, srv, opts), openNATSWith(t, srv, opts)}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		keys []string
	)
	for i, s := range stores {
		wg.Go(func() {
			for j := 0; ; j++ {
				route := "K#" + strconv.Itoa(i)
				key, _, err := s.Enqueue(route, value(route))
				if errors.Is(err, ErrFull) {
					return
				}
				if err != nil {
					t.Error(err)
					return
				}
				if j > 100 {
					t.Errorf("store %d sent %d values of %d bytes under a total of %d", i, j, valueLen, total)
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
	tot := totals(t, stores[1])
	if tot.Bytes > total || tot.Entries != len(keys) {
		t.Fatalf("Totals = %+v after %d accepted sends, total %d", tot, len(keys), total)
	}
	for _, s := range stores {
		_, _, err := s.Enqueue("K#0", value("K#0"))
		wantBound(t, err, ErrFull, total)
	}
	del(t, stores[1], keys[0])
	enqueue(t, stores[0], "K#0", string(value("K#0")))
	_, _, err := stores[1].Enqueue("K#1", value("K#1"))
	wantBound(t, err, ErrFull, total)
}

// Every process on a stream must apply the same total: a store opened with
// another one finds the stream's max_bytes in its way, and so does a store
// opening a stream made before the total existed, which discards the
// oldest messages of the whole stream instead of refusing new ones.
func TestNATSStreamWithoutTheTotalIsRefused(t *testing.T) {
	t.Parallel()
	srv := natstest.Start(t, nil)
	_, js := jsClient(t, srv)
	openNATSWith(t, srv, &NATSOptions{Options: Options{TotalBytes: 64 << 20}, Stream: "SIXTYFOUR"})
	_, err := OpenNATS(srv.URL(), &NATSOptions{Options: Options{TotalBytes: 32 << 20}, Stream: "SIXTYFOUR"})
	ce, ok := errors.AsType[*StreamConfigError](err)
	if !ok {
		t.Fatalf("OpenNATS with another total: %v, want a StreamConfigError", err)
	}
	want := []ConfigMismatch{{Field: "max_bytes", Have: "67108864", Want: "33554432"}}
	if diff := cmp.Diff(want, ce.Mismatches); diff != "" {
		t.Fatalf("mismatches (-want +got):\n%s", diff)
	}

	old := streamConfig("OLD", DefaultCap, 1, 0, 0)
	old.MaxBytes, old.Discard = -1, jetstream.DiscardOld
	if _, err := js.CreateStream(t.Context(), old); err != nil {
		t.Fatal(err)
	}
	_, err = OpenNATS(srv.URL(), &NATSOptions{Stream: "OLD"})
	if ce, ok = errors.AsType[*StreamConfigError](err); !ok {
		t.Fatalf("OpenNATS of a stream without a total: %v, want a StreamConfigError", err)
	}
	want = []ConfigMismatch{
		{Field: "discard", Have: "DiscardOld", Want: "DiscardNew"},
		{Field: "max_bytes", Have: "unlimited", Want: strconv.Itoa(DefaultTotalBytes)},
	}
	if diff := cmp.Diff(want, ce.Mismatches); diff != "" {
		t.Fatalf("mismatches (-want +got):\n%s", diff)
	}
	if !errors.Is(err, ErrStreamConfig) {
		t.Fatalf("%v does not wrap ErrStreamConfig", err)
	}
}
