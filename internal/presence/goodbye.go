package presence

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/relay"
	"github.com/interlink-go/interlink/internal/route"
)

// GoodbyeTimeout bounds [Announcer.Goodbye] as a whole, however many peers
// and relays there are.
const GoodbyeTimeout = 3 * time.Second

// GoodbyeText returns the text of the goodbye that session sends as it ends.
func GoodbyeText(session string) string {
	return fmt.Sprintf("Session %s is shutting down and will not answer any more. "+
		"If you were waiting for it, stop waiting and run discover to see which sessions are still live.", session)
}

// Goodbye sends text as a plain signed message to every session in sticky
// (a peer key mapped to the session it last wrote from, as kept by
// the Snapshot of inbound.Sticky), with ownRoute as the reply hint. Each message gets a fresh
// id and the current time and carries no task fields. It is posted straight
// to every relay for the route <peer key>#<session> with [relay.Post],
// bypassing the outbox, so nothing is retried later. The whole call ends
// within [GoodbyeTimeout].
//
// Goodbye returns how many messages at least one relay accepted. Failures
// are logged at debug level.
func (a *Announcer) Goodbye(ctx context.Context, sticky map[identity.PublicKey]string, ownRoute route.Route, text string) int {
	ctx, cancel := context.WithTimeout(ctx, GoodbyeTimeout)
	defer cancel()
	var (
		wg       sync.WaitGroup
		accepted atomic.Int64
	)
	for key, session := range sticky {
		to := route.New(key.String(), session).String()
		payload, msgID, err := a.goodbyeMessage(key, ownRoute, text)
		if err != nil {
			a.log.Debug("presence: goodbye not signed", "to", to, "err", err)
			continue
		}
		wg.Go(func() {
			if a.post(ctx, to, msgID, payload) {
				accepted.Add(1)
			}
		})
	}
	wg.Wait()
	return int(accepted.Load())
}

// goodbyeMessage returns the signed JSON of a goodbye to key and its id.
func (a *Announcer) goodbyeMessage(key identity.PublicKey, ownRoute route.Route, text string) ([]byte, string, error) {
	id, err := identity.NewMsgID(nil)
	if err != nil {
		return nil, "", err
	}
	m := identity.Message{
		To:    key.String(),
		Text:  text,
		TS:    identity.Millis(a.now()),
		MsgID: id,
		Kind:  identity.KindMessage,
	}
	if err := a.signer.SignMessage(&m); err != nil {
		return nil, "", err
	}
	// The reply hint is not signed, so it is set after signing.
	m.ReplyTo = ownRoute.String()
	b, err := json.Marshal(m)
	if err != nil || a.seal == nil {
		return b, id, err
	}
	b, _, err = a.seal(&m, b)
	return b, id, err
}

// post sends payload to route to on every relay and reports whether any of
// them accepted it.
func (a *Announcer) post(ctx context.Context, to, msgID string, payload []byte) bool {
	out := relay.Post(ctx, relay.Senders(a.relays), to, payload)
	for _, f := range out.Failed {
		a.log.Debug("presence: goodbye not delivered", "relay", f.URL, "to", to, "msg_id", msgID, "err", f.Err)
	}
	return out.OK()
}
