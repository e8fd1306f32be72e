package bus

import (
	"fmt"
	"net/http"

	"github.com/interlink-go/interlink/internal/store"
)

// ack serves POST /ack: delete one message by the key /recv handed out.
// Deleting a key that is already gone succeeds, so acks are idempotent.
//
// The key must belong to the route named by me. That stops a client from
// acking another route's message by mistake; it is no protection against
// anyone, since whoever knows a route can poll it for its keys.
func (s *Server) ack(w http.ResponseWriter, r *http.Request) error {
	body, err := s.readBody(w, r, MaxBodyBytes)
	if err != nil {
		return err
	}
	req, err := decodeAck(body)
	if err != nil {
		return err
	}
	if !store.HasRoute(req.key, req.me) {
		return errForeignAck
	}
	if err := s.st.Delete(req.key); err != nil {
		s.log.Error("ack failed", "route", req.me, "error", err)
		return fmt.Errorf("%w: %w", errStorage, err)
	}
	s.counters.acked.Add(1)
	w.WriteHeader(http.StatusOK)
	return nil
}
