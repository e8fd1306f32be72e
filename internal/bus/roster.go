package bus

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/wire"
)

// The roster's endpoints: /announce, /unregister and /roster. The roster
// itself, its bounds, listings and shared log, is package roster's.

// announce serves POST /announce: store the body as the roster entry of
// its key. The body is neither verified nor interpreted beyond the key;
// clients verify every roster element and drop forgeries. A signed request
// must be signed by the key it announces, and the announcement's own
// signature must verify ([Auth]).
func (s *Server) announce(w http.ResponseWriter, r *http.Request) error {
	signed, err := s.guard.admit(r)
	if err != nil {
		return err
	}
	body, err := readBody(w, r, wire.MaxAnnounceBytes, s.requestTimeout)
	if err != nil {
		return err
	}
	a, err := s.rosterUpdate(r, body, signed, true)
	if err != nil {
		return err
	}
	if s.shared != nil {
		if err := s.shared.Announce(a, s.millis(), s.done); err != nil {
			s.log.Error("announce failed", "route", a.Key, "error", err)
			return fmt.Errorf("%w: %w", errStorage, err)
		}
		w.WriteHeader(http.StatusAccepted)
		return nil
	}
	evicted, stored := s.roster.Upsert(a, s.millis())
	switch {
	case !stored:
		s.log.Debug("announcement too large to list; dropped", "route", a.Key)
	case evicted > 0:
		s.log.Debug("roster full; entries refreshed longest ago gave way", "route", a.Key, "evicted", evicted)
	}
	w.WriteHeader(http.StatusAccepted)
	return nil
}

// unregister serves POST /unregister: remove one roster entry. Its queue is
// left alone; messages already sent to it wait for the next session. A
// signed request must be signed by the key it unregisters ([Auth]).
func (s *Server) unregister(w http.ResponseWriter, r *http.Request) error {
	signed, err := s.guard.admit(r)
	if err != nil {
		return err
	}
	body, err := readBody(w, r, wire.MaxBodyBytes, s.requestTimeout)
	if err != nil {
		return err
	}
	a, err := s.rosterUpdate(r, body, signed, false)
	if err != nil {
		return err
	}
	if s.shared != nil {
		if err := s.shared.Unregister(a.Key, s.done); err != nil {
			s.log.Error("unregister failed", "route", a.Key, "error", err)
			return fmt.Errorf("%w: %w", errStorage, err)
		}
		w.WriteHeader(http.StatusAccepted)
		return nil
	}
	s.roster.Remove(a.Key)
	w.WriteHeader(http.StatusAccepted)
	return nil
}

// rosterUpdate decodes the body of an /announce (announce set) or
// /unregister request and, for a signed one, checks its signature, its
// signer and the signer's roster bucket.
func (s *Server) rosterUpdate(r *http.Request, body []byte, signed, announce bool) (wire.Announce, error) {
	var signer identity.PublicKey
	if signed {
		var err error
		if signer, err = s.guard.verify(r, body); err != nil {
			return wire.Announce{}, err
		}
	}
	a, err := wire.DecodeAnnounce(body)
	if err != nil || !signed {
		return a, err
	}
	own := body
	if !announce {
		own = nil
	}
	if err := s.guard.announcer(signer, a, own); err != nil {
		return a, err
	}
	return a, s.guard.allowRoster(signer)
}

// listRoster serves GET /roster: every live announcement as it was sent,
// with "age_ms" set to the time since it arrived (replacing any age_ms the
// sender put in), in roster key order. With the query keys=K1,K2,...
// ([wire.DecodeRosterQuery]) it lists only the entries of those keys, so
// an agent that knows whom it writes to reads a few entries, not the
// roster.
//
// The answer is written from the roster's snapshot ([roster.Listing]),
// never from a copy of the roster, and measured first, so that it carries
// a Content-Length. It carries an entity tag, and a request whose
// If-None-Match names it gets 304 and no body. Caches must ask again
// before each reuse; on a bus that requires signatures each requester gets
// its own listing, which no shared cache may hand to another.
//
// A signed request is verified and a bad signature refused, as on every
// route; an unsigned one takes a token of its address's bucket. The
// listing is the same either way, unless the bus requires signatures
// ([AuthRequired]): then each entry shows its details only to its own key
// and the readers it names, and to everyone else its public variant if it
// is discoverable, or nothing.
func (s *Server) listRoster(w http.ResponseWriter, r *http.Request) error {
	signed, err := s.guard.admitOpen(r)
	if err != nil {
		return err
	}
	var requester *identity.PublicKey
	if signed {
		key, err := s.guard.verify(r, nil)
		if err != nil {
			return err
		}
		requester = &key
	}
	q, err := wire.DecodeRosterQuery(r.URL.RawQuery)
	if err != nil {
		return err
	}
	private := s.guard.mode == AuthRequired
	l := s.roster.Snapshot().Listing(q.Keys, requester, private, s.millis())
	h := w.Header()
	h.Set("ETag", l.Tag())
	if private {
		h.Set("Cache-Control", "private, no-cache")
	} else {
		h.Set("Cache-Control", "no-cache")
	}
	if l.Matches(r.Header.Values("If-None-Match")) {
		w.WriteHeader(http.StatusNotModified)
		return nil
	}
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(l.Len()))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = l.WriteTo(w) // a write error means the client left
	}
	return nil
}
