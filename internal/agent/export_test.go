package agent

import (
	"log/slog"

	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/pairing"
)

// SetPairingWrite reopens a's pairing store so that its writes go through
// write, for tests that simulate a failing disk.
func SetPairingWrite(a *Agent, root string, write func(path string, data []byte) error) error {
	s, err := pairing.Open(root, a.own, a.session, &pairing.Options{Logger: slog.New(slog.DiscardHandler), Write: write})
	if err != nil {
		return err
	}
	a.pairing = s
	return nil
}

// StickySession returns the session of key that a's replies go to, if a
// remembers one. It is set just after the mailbox commit of a message from
// key, so a test that saw the message waits for it before replying.
func StickySession(a *Agent, key identity.PublicKey) (string, bool) {
	return a.sticky.Get(key)
}
