package outbox_test

import (
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/interlink-go/interlink/internal/bus"
	"github.com/interlink-go/interlink/internal/bus/bustest"
	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/keylimit"
	"github.com/interlink-go/interlink/internal/outbox"
	"github.com/interlink-go/interlink/internal/relay"
	"github.com/interlink-go/interlink/internal/testutil"
)

// codeCounter counts the answers of one status code.
type codeCounter struct {
	http.ResponseWriter
	code int
	n    *atomic.Int64
}

func (w *codeCounter) WriteHeader(code int) {
	if code == w.code {
		w.n.Add(1)
	}
	w.ResponseWriter.WriteHeader(code)
}

// A bus that limits the sender's key answers 429 with Retry-After; the
// outbox keeps each refused message, tries that route again no sooner
// than the bus asked, even though it would retry every 20 ms otherwise
// and more messages for the route keep arriving, and in the end delivers
// every message.
func TestOutboxWaitsForRetryAfterAndLosesNothing(t *testing.T) {
	var refused atomic.Int64
	url := bustest.Start(t, &bustest.Options{
		Limits: &bus.Limits{Sends: keylimit.Rate{Every: time.Second, Burst: 2}},
		Wrap: func(h http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				h.ServeHTTP(&codeCounter{ResponseWriter: w, code: http.StatusTooManyRequests, n: &refused}, r)
			})
		},
	})
	c := relay.New(url, &relay.Options{Signer: sender})
	o := newOutbox(t, []outbox.Sender{c}, &outbox.Options{RetryEvery: 20 * time.Millisecond})
	start(t, o)
	const n = 4
	var ids []string
	for i := range n {
		m := newMessage(t, "limited", time.Now())
		enqueue(t, o, routeTo("s1"), m)
		ids = append(ids, m.MsgID)
		if i == 2 {
			// A message queued while the route waits does not hurry it.
			testutil.Eventually(t, 10*time.Second, "a refusal", func() bool { return refused.Load() > 0 })
		}
	}
	for _, id := range ids {
		testutil.Eventually(t, 30*time.Second, "message "+id+" accepted", func() bool {
			return status(t, o, id).State == outbox.StateBusAccepted
		})
	}
	// Each refusal asked for the whole time its bucket needed, so every
	// message past the burst is refused at most once.
	if got := refused.Load(); got < 1 || got > n-2 {
		t.Errorf("%d sends refused with 429, want 1 to %d", got, n-2)
	}
	// Nothing was lost: the recipient's queue holds all of them.
	got := map[string]bool{}
	for range n {
		d, err := relay.New(url, nil).Recv(bg, routeTo("s1"), 0)
		if err != nil || !d.HasMessage {
			t.Fatalf("recv: %+v %v", d, err)
		}
		m, err := identity.DecodeMessage(d.Payload)
		if err != nil {
			t.Fatal(err)
		}
		got[m.MsgID] = true
		if err := relay.New(url, nil).Ack(bg, routeTo("s1"), d.Ack); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range ids {
		if !got[id] {
			t.Errorf("message %s is not on the bus", id)
		}
	}
}
