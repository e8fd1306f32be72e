package tools

import (
	"context"
	"log/slog"

	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/relay"
	"github.com/interlink-go/interlink/internal/sealcap"
)

// learnCaps records in store the signed capabilities of every roster
// entry whose key want accepts, so that a key learned to accept sealed
// messages keeps getting them while it is away (see package sealcap).
// Only the keys a tool is about to write to, or peers, are recorded, so a
// roster full of strangers costs nothing. A nil store learns nothing; a
// failure is logged, and the message goes as the file already says.
func learnCaps(ctx context.Context, store *sealcap.Store, log *slog.Logger, ros relay.Roster, want func(identity.PublicKey) bool) {
	if store == nil {
		return
	}
	for _, e := range ros.Entries {
		if !e.CapsSigned || !want(e.Key) {
			continue
		}
		if _, err := store.LearnAnnouncement(ctx, e.Key, e.CapsTS, e.Caps, true); err != nil && log != nil {
			log.Warn("capabilities of a key not recorded", "key", e.Key.Fingerprint(), "err", err)
		}
	}
}

// sealsTo reports whether messages to key go sealed. An unreadable file
// counts as yes for sizing: the outbox would not send the message plain.
func sealsTo(store *sealcap.Store, key identity.PublicKey) bool {
	if store == nil {
		return false
	}
	yes, err := store.Seals(key)
	return yes || err != nil
}
