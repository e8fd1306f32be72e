package nats

import (
	"errors"
	"strconv"
	"testing"

	"github.com/interlink-go/interlink/internal/store"
	"github.com/interlink-go/interlink/internal/store/natstest"
	"github.com/interlink-go/interlink/internal/store/storetest"
)

// TestConformance runs the conformance suite against stores on streams of
// one server.
func TestConformance(t *testing.T) {
	srv := natstest.Start(t, nil)
	storetest.Run(t, storetest.Backend{
		Open: func(tb testing.TB, opts *store.Options) store.Store {
			return openNATS(tb, srv, opts)
		},
		Remote:       true,
		OwnByteCount: true,
		NoRouteBytes: true,
	})
}

// checkAndClose checks s's invariants, then closes it.
func checkAndClose(tb testing.TB, s *Store) {
	tb.Helper()
	if err := s.check(); err != nil {
		tb.Errorf("store invariants: %v", err)
	}
	if err := s.Close(); err != nil && !errors.Is(err, store.ErrClosed) {
		tb.Errorf("Close: %v", err)
	}
}

var (
	enqueue   = storetest.Enqueue
	peek      = storetest.Peek
	del       = storetest.Delete
	depth     = storetest.Depth
	wantHead  = storetest.WantHead
	wantEmpty = storetest.WantEmpty
	drain     = storetest.Drain
	seqOf     = storetest.SeqOf
	value     = storetest.Value
	wantBound = storetest.WantBound
)

const valueLen = storetest.ValueLen

// totals returns what s holds.
func totals(tb testing.TB, s *Store) store.Totals {
	tb.Helper()
	t, err := s.Totals()
	if err != nil {
		tb.Fatalf("Totals: %v", err)
	}
	return t
}

func itoa(i int) string { return strconv.Itoa(i) }
