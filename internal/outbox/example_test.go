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
type printRelay struct{}

func (printRelay) URL() string { return "http://127.0.0.1:9440" }

func (printRelay) Send(_ context.Context, route string, _ []byte) error {
	fmt.Println("relay got a message for", route)
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
	o, err := outbox.Open(root, signer.Public(), "s0", []outbox.Sender{printRelay{}}, signer, nil)
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
	for {
		e, _, _ := o.Status(m.MsgID)
		if e.State != outbox.StatePending {
			fmt.Println(e.State, e.AcceptedBy)
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	<-done
	// Output:
	// relay got a message for KEY#s1
	// bus_accepted [http://127.0.0.1:9440]
}
