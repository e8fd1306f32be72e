package bus

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/interlink-go/interlink/internal/store"
	"github.com/interlink-go/interlink/internal/wire"
)

// What a bus does when other buses share its store: wake its polls for
// messages they stored, report the store's health, and keep the roster in
// a log they share (see [roster.Log]); [New] and [Server.Shutdown] start
// and stop what a shared store asks for.

// MaxEnvelopeBytes is the largest value the bus stores for a message: an
// envelope around the payload of a /send body of [wire.MaxBodyBytes]. A store
// that limits its values ([store.ValueLimiter]), such as a NATS server's
// max_payload, must take this much for the bus to accept every body the
// original's relays accept; one that takes less lowers the bus's limit
// ([BodyLimit]).
const MaxEnvelopeBytes = wire.MaxBodyBytes + wire.EnvelopeOverhead

// MinBodyBytes is the smallest limit on /send bodies a bus runs with. A
// store whose value limit gives less makes interlink-bus refuse to start.
// 32 KiB carry every pairing, presence and receipt message, a text of
// about 30 KiB, and the roster's records (two announcements of
// [wire.MaxAnnounceBytes] each at most).
const MinBodyBytes = 32 << 10

// MinEnvelopeBytes is the value a store must take for a bus to accept
// bodies of [MinBodyBytes].
const MinEnvelopeBytes = MinBodyBytes + wire.EnvelopeOverhead

// BodyLimit returns the largest /send body a bus accepts when its store
// takes values of up to maxValue bytes: [wire.MaxBodyBytes], or less when the
// envelope of a larger body would not fit.
func BodyLimit(maxValue int64) int64 {
	return max(min(wire.MaxBodyBytes, maxValue-wire.EnvelopeOverhead), 0)
}

// MaxBody returns the largest /send body the bus accepts now: a larger one
// gets 413 naming the limit. It is [wire.MaxBodyBytes] unless the store
// takes less ([store.ValueLimiter]), and may change while the bus runs when
// the store's limit does. Every answer of the bus carries it in
// [wire.MaxBodyHeader].
func (s *Server) MaxBody() int64 {
	if s.limiter == nil {
		return wire.MaxBodyBytes
	}
	return BodyLimit(s.limiter.MaxValue())
}

// maxBodyValue is a header value of [wire.MaxBodyHeader], kept while the limit
// stays the same so that answers do not format it anew.
type maxBodyValue struct {
	limit int64
	value []string
}

// setMaxBody adds [wire.MaxBodyHeader] to the answer w is about to write,
// so that clients and diagnoses learn the limit without a request of
// their own.
func (s *Server) setMaxBody(w http.ResponseWriter) {
	limit := s.MaxBody()
	v := s.maxBodyHeader.Load()
	if v == nil || v.limit != limit {
		v = &maxBodyValue{limit: limit, value: []string{strconv.FormatInt(limit, 10)}}
		s.maxBodyHeader.Store(v)
	}
	// The key is in canonical form already.
	w.Header()[wire.MaxBodyHeader] = v.value
}

// MaxEntryBytes is what the largest message the bus stores counts for
// against a store's byte bounds ([store.EntrySize]): its envelope on the
// longest route. A route's byte bound below it would refuse valid sends for
// good, so interlink-bus accepts none lower.
var MaxEntryBytes = store.EntrySize(strings.Repeat("r", wire.MaxRouteBytes), MaxEnvelopeBytes)

// errUnavailable marks a store that cannot serve requests now; /healthz
// then answers 503.
var errUnavailable = errors.New("store unavailable")

// storeHealth returns nil when the store can serve requests, and otherwise
// an error wrapping [errUnavailable]. Only stores that can fail and recover
// while the bus runs ([store.Health]) are asked; asking costs no I/O.
func (s *Server) storeHealth() error {
	h, ok := s.st.(store.Health)
	if !ok {
		return nil
	}
	if err := h.Healthy(); err != nil {
		return fmt.Errorf("%w: %w", errUnavailable, err)
	}
	return nil
}
