package reqsign_test

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/reqsign"
)

func Example() {
	signer, _ := identity.NewSigner(bytes.Repeat([]byte{7}, identity.SeedSize))
	body := []byte(`{"me":"key#s1","ack":"key#s1\u000000000000000000000001"}`)
	now := time.Now()

	// Client side: sign, then send body unchanged.
	req := httptest.NewRequest(http.MethodPost, "http://relay.example:9440/ack", bytes.NewReader(body))
	if err := reqsign.Sign(req, body, signer, now); err != nil {
		panic(err)
	}

	// Bus side: one verifier for the process.
	v, _ := reqsign.New(nil)
	key, err := v.Verify(req, body, now)
	fmt.Println(key == signer.Public(), err)

	// The same request again is a replay.
	_, err = v.Verify(req, body, now)
	fmt.Println(errors.Is(err, reqsign.ErrReplay))
	// Output:
	// true <nil>
	// true
}
