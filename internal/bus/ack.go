package bus

import (
	"fmt"
	"net/http"

	"github.com/interlink-go/interlink/internal/store"
	"github.com/interlink-go/interlink/internal/wire"
)

// ack serves POST /ack: delete one message by the key /recv handed out.
// Deleting a key that is already gone succeeds, so acks are idempotent.
//
// The key must belong to the route named by me. That stops a client from
// acking another route's message by mistake; it is no protection against
// anyone unsigned, since whoever knows a route can poll it for its keys; a
// signed request must be signed by the route's key ([Auth]).
func (s *Server) ack(w http.ResponseWriter, r *http.Request) error {
	signed, err := s.guard.admit(r)
	if err != nil {
		return err
	}
	body, err := readBody(w, r, wire.MaxBodyBytes, s.requestTimeout)
	if err != nil {
		return err
	}
	req, err := wire.DecodeAck(body)
	if err != nil {
		return err
	}
	if signed {
		if err := s.guard.signedBy(r, body, req.Me); err != nil {
			return err
		}
	}
	if !store.HasRoute(req.Key, req.Me) {
		return errForeignAck
	}
	if err := s.st.Delete(req.Key); err != nil {
		s.log.Error("ack failed", "route", req.Me, "error", err)
		return fmt.Errorf("%w: %w", errStorage, err)
	}
	s.counters.acked.Add(1)
	w.WriteHeader(http.StatusOK)
	return nil
}
