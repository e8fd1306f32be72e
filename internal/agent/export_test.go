package agent

import (
	"log/slog"

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
