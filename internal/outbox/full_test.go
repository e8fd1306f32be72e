package outbox_test

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/interlink-go/interlink/internal/bus/bustest"
	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/outbox"
	"github.com/interlink-go/interlink/internal/relay"
	"github.com/interlink-go/interlink/internal/store"
	"github.com/interlink-go/interlink/internal/testutil"
)

// A bus whose queues are full refuses a message with 507; the outbox keeps
// it pending, with the bus's reason, and delivers it once a receiver has
// made room: a full bus delays a message and loses nothing.
func TestFullBusDelaysAMessageAndLosesNothing(t *testing.T) {
	url := bustest.Start(t, &bustest.Options{Store: &store.Options{TotalBytes: 64 << 10}})
	c := relay.New(url, nil)
	// Fill the bus with ever smaller messages, until even a small one is
	// refused and no signed message fits.
	var filled []string
	for _, size := range []int{8 << 10, 1 << 10, 64} {
		for i := 0; ; i++ {
			route := fmt.Sprintf("filler#%d-%d", size, i)
			err := c.Send(bg, route, []byte(`"`+strings.Repeat("x", size)+`"`))
			var se *relay.StatusError
			if errors.As(err, &se) && se.Code == http.StatusInsufficientStorage {
				if se.Permanent() {
					t.Fatalf("%v counts as a permanent refusal", err)
				}
				break
			}
			if err != nil {
				t.Fatalf("filling the bus: %v", err)
			}
			filled = append(filled, route)
		}
	}

	o := newOutbox(t, []outbox.Sender{c}, &outbox.Options{RetryEvery: 20 * time.Millisecond})
	start(t, o)
	m := newMessage(t, "hello", time.Now())
	enqueue(t, o, routeTo("s1"), m)
	testutil.Eventually(t, 10*time.Second, "a first attempt", func() bool { return status(t, o, m.MsgID).Attempts > 0 })
	e := wantState(t, o, m.MsgID, outbox.StatePending)
	if !strings.Contains(e.LastError, "507") || !strings.Contains(e.LastError, "bus full") {
		t.Fatalf("last error %q does not say the bus is full", e.LastError)
	}

	d, err := c.Recv(bg, filled[0], 0)
	if err != nil || !d.HasMessage {
		t.Fatalf("Recv(%s): %+v, %v", filled[0], d, err)
	}
	if err := c.Ack(bg, filled[0], d.Ack); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 10*time.Second, "the message accepted", func() bool {
		return status(t, o, m.MsgID).State == outbox.StateBusAccepted
	})
	d, err = c.Recv(bg, routeTo("s1"), 0)
	if err != nil || !d.HasMessage {
		t.Fatalf("Recv: %+v, %v", d, err)
	}
	got, err := identity.DecodeMessage(d.Payload)
	if err != nil || got.MsgID != m.MsgID {
		t.Fatalf("the bus holds %+v, %v; want message %s", got, err, m.MsgID)
	}
}
