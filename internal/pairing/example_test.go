package pairing_test

import (
	"bytes"
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/outbox"
	"github.com/interlink-go/interlink/internal/pairing"
	"github.com/interlink-go/interlink/internal/route"
)

// mustSigner returns the signer whose seed is 32 copies of b.
func mustSigner(b byte) *identity.Signer {
	s, err := identity.NewSigner(bytes.Repeat([]byte{b}, identity.SeedSize))
	if err != nil {
		log.Fatal(err)
	}
	return s
}

// A knock arrives, is stored, and is accepted: the requester is authorized
// and the confirmation is queued in Bob's outbox for the session that
// knocked.
func ExampleStore_Accept() {
	root, err := os.MkdirTemp("", "pairing")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(root)

	alice, bob := mustSigner(1), mustSigner(2)
	now := time.UnixMilli(1_700_000_000_000)
	aliceRoute := route.New(alice.Public().String(), "alice-1")
	bobRoute := route.New(bob.Public().String(), "bob-1")

	// Alice knocks on Bob's session bob-1.
	knock, err := pairing.RequestMessage(alice, bob.Public(), bobRoute, "alice", "req-1", aliceRoute, now)
	if err != nil {
		log.Fatal(err)
	}

	// Bob's session stores the knock once the trust gate has passed it.
	store, err := pairing.Open(root, bob.Public(), bobRoute.Session, nil)
	if err != nil {
		log.Fatal(err)
	}
	req, err := pairing.InboundFromKnock(alice.Public(), &knock.Msg)
	if err != nil {
		log.Fatal(err)
	}
	if _, err := store.Receive(req); err != nil {
		log.Fatal(err)
	}

	// Later Bob's operator accepts it by fingerprint.
	req, err = store.Find(alice.Public().Fingerprint())
	if err != nil {
		log.Fatal(err)
	}
	confirm, err := pairing.AcceptMessage(bob, req, "bob", bobRoute, now, "acc-1")
	if err != nil {
		log.Fatal(err)
	}
	ob, err := outbox.Open(root, bob.Public(), bobRoute.Session, nil, bob, nil)
	if err != nil {
		log.Fatal(err)
	}
	err = store.Accept(context.Background(), req, confirm, ob, func() error {
		fmt.Println("authorize", req.Name) // add the peer to the policy here
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}

	st, err := store.Load()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("pending requests:", len(st.Inbound))
	sending, err := ob.Pending()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("confirmation", sending[0].MsgID, "to alice's session:", route.Parse(sending[0].Route).Session)
	// Output:
	// authorize alice
	// pending requests: 0
	// confirmation acc-1 to alice's session: alice-1
}
