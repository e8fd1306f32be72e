package outbox_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/outbox"
)

// printRelay is a relay that accepts everything and says so.
type printRelay struct{ got chan struct{} }

func (printRelay) URL() string { return "http://127.0.0.1:9440" }

func (r printRelay) Send(_ context.Context, route string, _ []byte) error {
	fmt.Println("relay got a message for", route)
	select {
	case r.got <- struct{}{}:
	default:
	}
	return nil
}

// A signed message is written to the outbox file, delivered by Run in the
// background, and its state read back.
func Example() {
	signer := newSigner(7)
	root, err := os.MkdirTemp("", "outbox")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(root)
	relay := printRelay{got: make(chan struct{}, 1)}
	o, err := outbox.Open(root, signer.Public(), "s0", []outbox.Sender{relay}, signer, nil)
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- o.Run(ctx) }()

	m := identity.Message{
		To:    signer.Public().String(),
		Text:  "hello",
		TS:    identity.Millis(time.Now()),
		MsgID: "0123456789abcdef0123456789abcdef",
	}
	if err := signer.SignMessage(&m); err != nil {
		panic(err)
	}
	if err := o.Enqueue(ctx, "KEY#s1", "self", m); err != nil {
		panic(err)
	}
	// Once this outbox has sent something it is the session's sender, and
	// Drain waits until nothing is pending.
	<-relay.got
	if n := o.Drain(ctx); n != 0 {
		panic(fmt.Sprint(n, " still pending"))
	}
	e, _, _ := o.Status(m.MsgID)
	fmt.Println(e.State, e.AcceptedBy)
	cancel()
	<-done
	// Output:
	// relay got a message for KEY#s1
	// bus_accepted [http://127.0.0.1:9440]
}
