package seal_test

import (
	"bytes"
	"fmt"

	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/seal"
)

func ExampleSealMessage() {
	aliceSeed := make([]byte, identity.SeedSize)
	bobSeed := bytes.Repeat([]byte{1}, identity.SeedSize)
	alice, _ := identity.NewSigner(aliceSeed)
	bob, _ := seal.NewRecipient(bobSeed)

	// Alice signs an ordinary message, then seals it to Bob.
	m := identity.Message{To: bob.Public().String(), Text: "meet at noon", TS: 1700000000000, MsgID: "m1"}
	if err := alice.SignMessage(&m); err != nil {
		panic(err)
	}
	env, err := seal.SealMessage(alice, &m, nil)
	if err != nil {
		panic(err)
	}
	payload, _ := env.MarshalJSON() // the /send payload

	// Bob opens it; a relay saw only the keys, the time and the size.
	got, err := seal.OpenMessage(bob, payload)
	fmt.Println(got.Text, err, bytes.Contains(payload, []byte("noon")))
	// Output: meet at noon <nil> false
}
