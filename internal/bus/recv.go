package bus

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/interlink-go/interlink/internal/store"
	"github.com/interlink-go/interlink/internal/wire"
)

// timeoutBody is the /recv answer when nothing arrived before the deadline.
var timeoutBody = []byte(wire.TimeoutAnswer)

// recv serves GET /recv: the oldest message of a route, waiting for one if
// the queue is empty. The message stays queued until it is acked, so every
// poll returns the same head.
//
// A signed request must be signed by the route's key; see [Auth].
func (s *Server) recv(w http.ResponseWriter, r *http.Request) error {
	signed, err := s.guard.admit(r)
	if err != nil {
		return err
	}
	q, err := wire.DecodeRecvQuery(r.URL.RawQuery, s.maxWait)
	if err != nil {
		return err
	}
	if signed {
		if err := s.guard.signedBy(r, nil, q.Me); err != nil {
			return err
		}
	}
	allowWait(w, q.Wait, s.requestTimeout)
	e, ok, err := s.poll(r.Context(), q.Me, q.Wait)
	if err != nil {
		s.log.Error("recv failed", "route", q.Me, "error", err)
		return fmt.Errorf("%w: %w", errPoll, err)
	}
	if !ok {
		writeJSON(w, http.StatusOK, timeoutBody)
		return nil
	}
	// A stored envelope that is not JSON would make the whole reply
	// unparseable. It answers 500 until someone acks its key, as in the
	// original; the bus itself only ever stores envelopes it built, which
	// pass the quicker strict check (wire.Valid), so json.Valid runs only
	// on the rest.
	if !wire.Valid(e.Value) && !json.Valid(e.Value) {
		s.log.Error("recv failed", "route", q.Me, "error", "stored envelope is not valid JSON")
		return fmt.Errorf("%w: stored envelope is not valid JSON", errPoll)
	}
	body, err := wire.RecvMessage(e.Key, e.Value)
	if err != nil {
		return fmt.Errorf("%w: %v", errPoll, err)
	}
	writeJSON(w, http.StatusOK, body)
	s.counters.delivered.Add(1)
	s.page.Delivered(s.millis())
	return nil
}

// poll returns the head of route's queue, waiting up to wait for one to
// arrive. It returns false when the wait ends empty: at the deadline, when
// ctx ends (the client left), or when the server shuts down.
func (s *Server) poll(ctx context.Context, route string, wait time.Duration) (store.Entry, bool, error) {
	select {
	case <-s.done:
		wait = 0
	default:
	}
	// A message already queued needs no waiter and no timer.
	if e, ok, err := s.st.Peek(route); ok || err != nil || wait <= 0 {
		return e, ok, err
	}
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	for {
		// Register before peeking; see waiters.
		wake := s.waiters.register(route)
		e, ok, err := s.st.Peek(route)
		woken := false
		if err == nil && !ok {
			select {
			case <-wake:
				woken = true
			case <-deadline.C:
			case <-ctx.Done():
			case <-s.done:
			}
		}
		s.waiters.unregister(route)
		if !woken {
			return e, ok, err
		}
	}
}
