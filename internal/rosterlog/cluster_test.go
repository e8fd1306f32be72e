package rosterlog

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/nats-io/nats.go"

	natsstore "github.com/interlink-go/interlink/internal/store/nats"
	"github.com/interlink-go/interlink/internal/store/natstest"
	"github.com/interlink-go/interlink/internal/testutil"
)

// failover bounds how long a test waits for a cluster to carry on after
// losing a server: a new leader for each stream, and clients moved to the
// servers left.
const failover = 60 * time.Second

// With three servers and three replicas, losing the server that leads the
// stream loses no stored message and no roster record: once a new leader
// is elected, another process reads everything in order, stores more, and
// sees the roster change.
func TestNATSClusterSurvivesTheLossOfAServer(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a cluster of three and waits for a failover")
	}
	c := natstest.StartCluster(t, 3, nil)
	opts := &natsstore.Options{Stream: "HA", Replicas: 3, Connect: []nats.Option{nats.ReconnectWait(50 * time.Millisecond)}}
	open := func() (*natsstore.Store, *Roster) {
		t.Helper()
		var s *natsstore.Store
		testutil.EventuallyNil(t, failover, "Open", func() (err error) {
			s, err = natsstore.Open(c.URL(), opts)
			return err
		})
		t.Cleanup(func() { s.Close() })
		var r *Roster
		testutil.EventuallyNil(t, failover, "OpenRoster", func() (err error) {
			r, err = Open(s, nil)
			return err
		})
		return s, r
	}
	a, ra := open()
	b, rb := open()
	w := watchLive(t, rb)

	var want []string
	for i := range 50 {
		enqueue(t, a, "K#s", itoa(i))
		want = append(want, itoa(i))
	}
	put(t, ra, "K#before", "1")
	if got := w.next(t); got.Key != "K#before" {
		t.Fatalf("watched %+v", got)
	}

	stream, err := a.Conn().JetStream().Stream(t.Context(), a.Conn().Stream())
	if err != nil {
		t.Fatal(err)
	}
	info, err := stream.Info(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if info.Cluster == nil || len(info.Cluster.Replicas) != 2 {
		t.Fatalf("stream cluster info %+v, want a leader and two replicas", info.Cluster)
	}
	c.Server(info.Cluster.Leader).Shutdown()

	testutil.EventuallyNil(t, failover, "Enqueue after the failover", func() error {
		_, _, err := a.Enqueue("K#s", []byte("after"))
		return err
	})
	want = append(want, "after")
	var got []string
	testutil.EventuallyNil(t, failover, "draining after the failover", func() error {
		for {
			e, ok, err := b.Peek("K#s")
			if err != nil || !ok {
				return err
			}
			if err := b.Delete(e.Key); err != nil {
				return err
			}
			got = append(got, string(e.Value))
		}
	})
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("messages after losing the leader (-stored +read):\n%s", diff)
	}

	var rev uint64
	testutil.EventuallyNil(t, failover, "roster Put after the failover", func() (err error) {
		rev, err = ra.Put("K#after", []byte("2"))
		return err
	})
	for {
		got := w.next(t)
		if got.Key == "K#after" && got.Rev == rev {
			break
		}
		if got.Key != "K#before" {
			t.Fatalf("watched %+v after the failover", got)
		}
	}
}
