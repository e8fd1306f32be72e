package nats

import (
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/interlink-go/interlink/internal/store"
	"github.com/interlink-go/interlink/internal/store/natstest"
)

// requests returns the number of messages s has sent to the server: each
// request, each publish.
func requests(s *Store) uint64 { return s.conn.nc.Stats().OutMsgs }

// A send to a route with room under the cap is one request to the server,
// a publish, and a cycle of send, peek and delete is three; neither the
// first send to a route nor a send after the route was emptied needs a
// count of the route.
func TestNATSSendToRouteWithRoomIsOneRequest(t *testing.T) {
	t.Parallel()
	srv := natstest.Start(t, nil)
	s := openNATS(t, srv, &store.Options{Cap: 4})
	for i := range 20 {
		before := requests(s)
		enqueue(t, s, "K#s", itoa(i))
		if n := requests(s) - before; n != 1 {
			t.Fatalf("send %d: %d requests, want 1", i, n)
		}
		peek(t, s, "K#s")
		e, _ := peek(t, s, "K#s")
		before = requests(s)
		del(t, s, e.Key)
		if n := requests(s) - before; n != 1 {
			t.Fatalf("delete %d: %d requests, want 1", i, n)
		}
	}
	for i := range 4 {
		before := requests(s)
		if _, dropped := enqueue(t, s, "K#t", itoa(i)); dropped != 0 {
			t.Fatalf("send %d to a new route dropped %d", i, dropped)
		}
		if n := requests(s) - before; n != 1 {
			t.Fatalf("send %d to a new route: %d requests, want 1", i, n)
		}
	}
	// At the cap, the send counts what the route holds.
	before := requests(s)
	if _, dropped := enqueue(t, s, "K#t", "over"); dropped != 1 {
		t.Fatalf("send over the cap dropped %d, want 1", dropped)
	}
	if n := requests(s) - before; n != 2 {
		t.Fatalf("send over the cap: %d requests, want 2 (a count and a publish)", n)
	}
}

// Two stores sending to one route in turns each report exactly what their
// sends dropped: a store's send is refused by the server when the other
// sent since, and counts the route again.
func TestNATSDroppedExactWithTwoSenders(t *testing.T) {
	t.Parallel()
	const capacity = 3
	srv := natstest.Start(t, nil)
	opts := &Options{Options: store.Options{Cap: capacity}, Stream: "TURNS"}
	stores := []*Store{openNATSWith(t, srv, opts), openNATSWith(t, srv, opts)}
	for i := range 12 {
		_, dropped := enqueue(t, stores[i%2], "K#s", itoa(i))
		if want := min(1, max(0, i+1-capacity)); dropped != want {
			t.Fatalf("send %d through store %d dropped %d, want %d", i, i%2, dropped, want)
		}
	}
	if _, values := drain(t, stores[0], "K#s"); len(values) != capacity || values[0] != "9" {
		t.Fatalf("queue after the sends: %q, want 9, 10, 11", values)
	}
}

// Deletes in another process only lower what a route holds: a store that
// filled a route, whose messages another store then acknowledged, reports
// no drop until the route is full again, and then one per send.
func TestNATSDroppedExactAfterDeletesElsewhere(t *testing.T) {
	t.Parallel()
	const capacity = 3
	srv := natstest.Start(t, nil)
	opts := &Options{Options: store.Options{Cap: capacity}, Stream: "ACKED"}
	a, b := openNATSWith(t, srv, opts), openNATSWith(t, srv, opts)
	for i := range capacity {
		enqueue(t, a, "K#s", "a"+itoa(i))
	}
	for range 2 {
		e, _ := peek(t, b, "K#s")
		del(t, b, e.Key)
	}
	for i, want := range []int{0, 0, 1, 1} {
		if _, dropped := enqueue(t, a, "K#s", "b"+itoa(i)); dropped != want {
			t.Fatalf("send %d after two deletes elsewhere dropped %d, want %d", i, dropped, want)
		}
	}
	// Emptied elsewhere: the next send learns from the server that nothing
	// is last on the route, and needs no count.
	enqueue(t, a, "K#e", "first")
	drain(t, b, "K#e")
	before := requests(a)
	if _, dropped := enqueue(t, a, "K#e", "again"); dropped != 0 {
		t.Fatalf("send to a route emptied elsewhere dropped %d", dropped)
	}
	if n := requests(a) - before; n != 2 {
		t.Fatalf("send to a route emptied elsewhere: %d requests, want 2 (a refused publish and a publish)", n)
	}
	wantHead(t, b, "K#e", "", "again")
}

// A stream on one server answers reads as direct gets; a stream with
// replicas is read through the API, which its leader answers.
func TestNATSDirectGetsOnlyOnOneServer(t *testing.T) {
	for _, c := range []struct {
		replicas int
		want     bool
	}{{1, true}, {3, false}} {
		if got := streamConfig("S", 8, c.replicas, 1<<20, 0).AllowDirect; got != c.want {
			t.Errorf("%d replicas: allow_direct %v, want %v", c.replicas, got, c.want)
		}
	}
	// A stream a store did not make is taken as it is.
	foreign := streamConfig("S", 8, 1, 1<<20, 0)
	foreign.Description, foreign.AllowDirect = "", false
	want := streamConfig("S", 8, 1, 1<<20, 0)
	if p := planFit(foreign, want, 1<<10); len(p.changes) != 0 || len(p.refused) != 0 {
		t.Errorf("foreign stream without direct gets: changes %v, refused %v; want none", p.changes, p.refused)
	}
	// Replicas that all answer reads are refused: they may lag.
	replicated := streamConfig("S", 8, 3, 1<<20, 0)
	replicated.AllowDirect = true
	if p := planFit(replicated, streamConfig("S", 8, 3, 1<<20, 0), 1<<10); len(p.refused) != 1 || p.refused[0].Field != "allow_direct" {
		t.Errorf("replicated stream with direct gets: refused %v, want allow_direct", p.refused)
	}
	srv := natstest.Start(t, nil)
	s := openNATS(t, srv, nil)
	if !s.stream.CachedInfo().Config.AllowDirect {
		t.Fatal("the store's stream on one server does not allow direct gets")
	}
	enqueue(t, s, "K#s", "x")
	if _, err := s.stream.GetMsg(t.Context(), 0, jetstream.WithGetMsgSubject(Subject(s.conn.name, "K#s"))); err != nil {
		t.Fatal(err)
	}
}

// What a store remembers of routes' tails stays bounded, and its own
// deletes keep each bound an upper bound: deleting the last message of a
// route the bound says is now empty makes the route known empty, and
// deleting it while others may remain forgets the route.
func TestRouteTailsBoundedAndKeptByDeletes(t *testing.T) {
	var r routeTails
	for i := range routeTailsMax + 10 {
		r.set(itoa(i), uint64(i+1), 1)
	}
	if n := r.len(); n != routeTailsMax {
		t.Fatalf("%d routes remembered, want %d", n, routeTailsMax)
	}
	r.set("a", 7, 2)
	r.deleted("a", 6) // an older one
	if last, n, ok := r.get("a"); !ok || last != 7 || n != 1 {
		t.Fatalf("after deleting an older message: %d, %d, %v; want 7, 1, true", last, n, ok)
	}
	r.deleted("a", 7)
	if last, n, ok := r.get("a"); !ok || last != 0 || n != 0 {
		t.Fatalf("after deleting the last one: %d, %d, %v; want 0, 0, true", last, n, ok)
	}
	r.set("b", 9, 3)
	r.deleted("b", 9)
	if _, _, ok := r.get("b"); ok {
		t.Fatal("a route whose last message went while others may remain is still remembered")
	}
}
