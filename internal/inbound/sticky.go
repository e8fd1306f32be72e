package inbound

import (
	"maps"
	"sync"

	"github.com/interlink-go/interlink/internal/identity"
)

// Sticky remembers, for each identity that wrote to us, the session it last
// wrote from, so that a reply without an explicit session goes back there.
// Stickiness is per identity, not per task. It lives in memory only and is
// shared by every relay loop of a process; it is safe for concurrent use.
//
// Entries come only from the reply_to hint of an admitted message whose key
// part is the signer's own key (see [gate.UsableReplyTo]): the hint is
// unsigned, so a relay that rewrites it can at most point replies at another
// session of the same signer. The map holds one entry per key, and only keys
// whose ordinary messages the gate delivered (peers and the own key) get one,
// so it grows only with the identities the operator admitted.
type Sticky struct {
	mu       sync.Mutex
	sessions map[identity.PublicKey]string // guarded by mu
}

// NewSticky returns an empty map. The zero Sticky is ready to use too.
func NewSticky() *Sticky { return &Sticky{} }

// Set records session as the one key last wrote from.
func (s *Sticky) Set(key identity.PublicKey, session string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sessions == nil {
		s.sessions = make(map[identity.PublicKey]string)
	}
	s.sessions[key] = session
}

// Get returns the session key last wrote from, and whether there is one.
func (s *Sticky) Get(key identity.PublicKey) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id, ok := s.sessions[key]
	return id, ok
}

// Snapshot returns a copy of the whole map.
func (s *Sticky) Snapshot() map[identity.PublicKey]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[identity.PublicKey]string, len(s.sessions))
	maps.Copy(out, s.sessions)
	return out
}
