package mailbox_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/mailbox"
)

func ExampleMailbox() {
	root, err := os.MkdirTemp("", "mailbox-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(root)

	me, _ := identity.NewSigner(make([]byte, identity.SeedSize))
	alice, _ := identity.NewSigner([]byte("alice-seed-alice-seed-alice-seed"))
	now := time.UnixMilli(1_700_000_000_000)
	mb, err := mailbox.Open(root, me.Public(), "s1", &mailbox.Options{
		Now:   func() time.Time { return now },
		NewID: func() (string, error) { return "0a1b2c3d", nil },
	})
	if err != nil {
		log.Fatal(err)
	}

	// The inbound loop commits a verified message, then acknowledges it to
	// the broker.
	m := identity.Message{To: me.Public().String(), Text: "can you review?", TS: identity.Millis(now), MsgID: "m1"}
	if err := alice.SignMessage(&m); err != nil {
		log.Fatal(err)
	}
	if _, err := mb.Retain(context.Background(), m, "alice"); err != nil {
		log.Fatal(err)
	}

	// The notifier wakes the host with a notice that carries no body.
	n, err := mb.Reserve(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	if _, err := mb.Finish(context.Background(), n.ID, mailbox.StateHostQueued); err != nil {
		log.Fatal(err)
	}

	// The host fetches, then acknowledges by exact receipt.
	recs, _ := mb.Receive(20)
	for _, r := range recs {
		fmt.Printf("[%s] %s from %s\n", r.State, r.Message.MsgID, r.Peer)
	}
	count, _ := mb.Acknowledge([]mailbox.Receipt{recs[0].Receipt()})
	fmt.Println("acknowledged", count)
	n, _ = mb.Reserve(context.Background())
	fmt.Println("notice after acknowledging:", n)
	// Output:
	// [host_queued] m1 from alice
	// acknowledged 1
	// notice after acknowledging: <nil>
}
