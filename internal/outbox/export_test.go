package outbox

import (
	"context"

	"github.com/interlink-go/interlink/internal/identity"
)

// Prefill queues msgs for route in one write of the file, as that many
// calls of Enqueue would one after another, for tests of the bounds.
func Prefill(o *Outbox, route, peer string, msgs []identity.Message) error {
	now := identity.Millis(o.now())
	return o.file.update(context.Background(), func(d *document) (bool, error) {
		for _, m := range msgs {
			raw, err := m.MarshalJSON()
			if err != nil {
				return false, err
			}
			d.entries = append(d.entries, &stored{
				Entry: Entry{MsgID: m.MsgID, Peer: peer, Route: route, Text: m.Text, TS: m.TS, QueuedAt: now, State: StatePending},
				raw:   raw,
			})
		}
		return true, nil
	})
}
