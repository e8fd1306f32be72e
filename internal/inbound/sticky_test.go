package inbound_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/interlink-go/interlink/internal/inbound"
	"github.com/interlink-go/interlink/internal/testutil"
)

func TestSticky(t *testing.T) {
	var s inbound.Sticky // the zero value is ready
	a, b := testutil.Signer(t, 2).Public(), testutil.Signer(t, 3).Public()
	if _, ok := s.Get(a); ok {
		t.Fatal("empty map has an entry")
	}
	s.Set(a, "s-1")
	s.Set(a, "s-2")
	s.Set(b, "s-9")
	if got, ok := s.Get(a); !ok || got != "s-2" {
		t.Errorf("Get(a) = %q, %v; want the latest session", got, ok)
	}
	snap := s.Snapshot()
	if len(snap) != 2 || snap[a] != "s-2" || snap[b] != "s-9" {
		t.Errorf("Snapshot = %v", snap)
	}
	snap[a] = "changed"
	if got, _ := s.Get(a); got != "s-2" {
		t.Error("changing a snapshot changed the map")
	}
}

// TestStickyConcurrent is for the race detector: relay loops share one map.
func TestStickyConcurrent(t *testing.T) {
	s := inbound.NewSticky()
	k := testutil.Signer(t, 2).Public()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 100 {
				s.Set(k, fmt.Sprint(i, j))
				s.Get(k)
				s.Snapshot()
			}
		})
	}
	wg.Wait()
	if _, ok := s.Get(k); !ok {
		t.Error("no entry after concurrent sets")
	}
}
