package outbox_test

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/outbox"
	"github.com/interlink-go/interlink/internal/testutil"
)

// A receipt goes out like a message, but no listing shows it, and once a
// relay took it (or refused it) it leaves the file, so it never pushes a
// sent message out of the log.
func TestReceiptsAreSentButNeverListedOrLogged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := newClock()
		r := newFake("http://relay")
		o := newOutbox(t, []outbox.Sender{r}, &outbox.Options{Now: clk.now})
		msg := newMessage(t, "a message", testEpoch)
		enqueue(t, o, routeTo("s1"), msg)
		rc := newMessage(t, `{"receipts":[]}`, testEpoch)
		rc.Kind = identity.KindReceipt
		if err := testutil.Signer(t, 1).SignMessage(&rc); err != nil {
			t.Fatal(err)
		}
		if err := o.EnqueueReceipt(context.Background(), routeTo("s1"), rc); err != nil {
			t.Fatal(err)
		}
		if got := pending(t, o); len(got) != 1 || got[0].MsgID != msg.MsgID {
			t.Errorf("pending lists %+v, want only the message", got)
		}
		if e, ok := lookup(t, o, rc.MsgID); !ok || !e.Receipt {
			t.Errorf("the pending receipt's entry = %+v, %v", e, ok)
		}
		start(t, o)
		synctest.Wait()
		wantState(t, o, msg.MsgID, outbox.StateBusAccepted)
		if len(r.calls(rc.MsgID)) != 1 {
			t.Errorf("the receipt was sent %d times", len(r.calls(rc.MsgID)))
		}
		if _, ok := lookup(t, o, rc.MsgID); ok {
			t.Error("the accepted receipt is still in the file")
		}
		if got := logOf(t, o, "bob", 0); len(got) != 1 || got[0].MsgID != msg.MsgID {
			t.Errorf("log = %+v, want only the message", got)
		}
		if got := logOf(t, o, "", 0); len(got) != 0 {
			t.Errorf("log of the receipts' empty label = %+v", got)
		}
	})
}
