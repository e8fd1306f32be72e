package nats

import (
	"errors"
	"strconv"
	"sync"
	"testing"

	"github.com/interlink-go/interlink/internal/store"
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
	opts := &Options{Options: store.Options{TotalBytes: total}, Stream: "FULL"}
	stores := []*Store{openNATSWith(t, srv, opts), openNATSWith(t, srv, opts)}
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
				if errors.Is(err, store.ErrFull) {
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
		t.Fatalf("store.Totals = %+v after %d accepted sends, total %d", tot, len(keys), total)
	}
	for _, s := range stores {
		_, _, err := s.Enqueue("K#0", value("K#0"))
		wantBound(t, err, store.ErrFull, total)
	}
	del(t, stores[1], keys[0])
	enqueue(t, stores[0], "K#0", string(value("K#0")))
	_, _, err := stores[1].Enqueue("K#1", value("K#1"))
	wantBound(t, err, store.ErrFull, total)
}
