// Package sealcap remembers which peer keys accept sealed messages (package
// seal), so that an agent seals every message to a key once it has learned
// that the key can open it, even while that key is away from every roster.
//
// # File
//
// One file per identity, shared by all its sessions and processes:
// <state root>/sealcap/<own key>.json, with the write lock
// <own key>.lock beside it. Every change is one locked read-modify-write
// with atomic replace (package statefile); reads take no lock. The file is
// compact JSON:
//
//	{"keys":{"<key>":{"sealed":true,"ts":1700000000000,"learned":1700000000123,"receipts":true,"receipts_ts":1700000000000},…}}
//
// ts is the signing time of the statement the entry was learned from,
// learned the local time it was written. receipts and receipts_ts say the
// same of end-to-end receipts ([identity.CapReceipts]), learned from a
// capabilities list or from a receipt the key signed.
//
// # What counts as a statement
//
// Only what the key itself signed: a capabilities list in one of its
// announcements ([identity.Announcement.VerifiedCaps]), which says sealed
// or not, and a sealed envelope from it that opened and passed the trust
// gate, which says sealed. An entry changes only for a statement signed
// later than the one it holds and saying the opposite. A relay that strips the list from an
// announcement, or serves an old announcement again, changes nothing; only
// the key can withdraw its support, by announcing a newer signed list
// without it.
//
// # Bounds
//
// At most [MaxKeys] keys; learning one more forgets the entry learned
// longest ago. Entries come only from keys an agent sends to, its peers
// and senders the gate admitted, so the bound is not reached in use.
package sealcap

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/seal"
	"github.com/interlink-go/interlink/internal/statefile"
)

// MaxKeys bounds the number of keys the file keeps.
const MaxKeys = 4096

// ErrCorrupt reports a file that is not a capabilities file. It is never
// overwritten; until it is repaired or removed, every key counts as not
// sealing and nothing is learned.
var ErrCorrupt = errors.New("sealcap: corrupt file")

// Entry is what is known of one key.
type Entry struct {
	// Sealed reports whether the key accepts sealed messages.
	Sealed bool `json:"sealed"`
	// TS is the signing time of the statement, Unix milliseconds.
	TS uint64 `json:"ts"`
	// Learned is when the entry was written, Unix milliseconds.
	Learned uint64 `json:"learned"`
	// Receipts reports whether the key sends and accepts end-to-end
	// receipts ([identity.CapReceipts]); ReceiptsTS is the signing time of
	// the statement that said so or not. They follow the same rule as
	// Sealed and TS, apart from them.
	Receipts   bool   `json:"receipts,omitempty"`
	ReceiptsTS uint64 `json:"receipts_ts,omitempty"`
}

type document struct {
	Keys map[string]Entry `json:"keys"`
}

// Store is the capabilities file of one identity. It is safe for
// concurrent use, and by several processes.
type Store struct {
	path, lock string
	now        func() time.Time
	cache      *statefile.Cache[document]
}

// Open returns the store of the identity own under stateRoot. Nothing is
// created until something is learned. now is the clock of the learned
// times; nil means time.Now.
func Open(stateRoot string, own identity.PublicKey, now func() time.Time) (*Store, error) {
	if stateRoot == "" {
		return nil, errors.New("sealcap: empty state root")
	}
	if now == nil {
		now = time.Now
	}
	path := filepath.Join(stateRoot, "sealcap", own.String()+".json")
	return &Store{
		path:  path,
		lock:  statefile.LockPath(path, "lock"),
		now:   now,
		cache: statefile.NewCache(func(d document) document { return d }), // never changed once decoded
	}, nil
}

// Path returns the path of the file.
func (s *Store) Path() string { return s.path }

func decode(data []byte, exists bool) (document, error) {
	var d document
	if !exists {
		return document{Keys: map[string]Entry{}}, nil
	}
	if err := json.Unmarshal(data, &d); err != nil || d.Keys == nil {
		return document{}, fmt.Errorf("%w: %s", ErrCorrupt, cmp.Or(fmt.Sprint(err), "no keys"))
	}
	return d, nil
}

func (s *Store) read() (document, error) {
	data, exists, err := statefile.Read(s.path)
	if err != nil {
		return document{}, err
	}
	if d, ok := s.cache.Get(data); ok && exists {
		return d, nil
	}
	d, err := decode(data, exists)
	if err != nil {
		return document{}, fmt.Errorf("%w (%s)", err, s.path)
	}
	if exists {
		s.cache.Put(data, d)
	}
	return d, nil
}

// Get returns what is known of key.
func (s *Store) Get(key identity.PublicKey) (Entry, bool, error) {
	d, err := s.read()
	if err != nil {
		return Entry{}, false, err
	}
	e, ok := d.Keys[key.String()]
	return e, ok, nil
}

// Seals reports whether messages to key are to be sealed. A file that
// cannot be read counts as not known, and the error says why.
func (s *Store) Seals(key identity.PublicKey) (bool, error) {
	e, ok, err := s.Get(key)
	return ok && e.Sealed, err
}

// Learn records a statement signed by key at ts that it does (sealed) or
// does not accept sealed messages. It changes the file only when the
// statement is newer than the one held, and reports whether it did.
func (s *Store) Learn(ctx context.Context, key identity.PublicKey, ts uint64, sealed bool) (bool, error) {
	return s.learn(ctx, key, func(e *Entry, fresh bool) bool {
		if !fresh && !newer(e.TS, e.Sealed, ts, sealed) {
			return false
		}
		e.Sealed, e.TS = sealed, ts
		return true
	})
}

// LearnReceipts records a statement signed by key at ts that it does or
// does not send and accept end-to-end receipts, by the rule of
// [Store.Learn].
func (s *Store) LearnReceipts(ctx context.Context, key identity.PublicKey, ts uint64, receipts bool) (bool, error) {
	return s.learn(ctx, key, func(e *Entry, fresh bool) bool {
		// The first statement is kept whatever it says, so that a key
		// known not to take receipts is told from one never heard of.
		if !fresh && e.ReceiptsTS != 0 && !newer(e.ReceiptsTS, e.Receipts, ts, receipts) {
			return false
		}
		if !fresh && e.ReceiptsTS == 0 && ts == 0 {
			return false
		}
		e.Receipts, e.ReceiptsTS = receipts, ts
		return true
	})
}

// Receipts reports whether key sends and accepts end-to-end receipts, and
// whether the key ever said either. A file that cannot be read counts as
// not known, and the error says why.
func (s *Store) Receipts(key identity.PublicKey) (yes, known bool, err error) {
	e, ok, err := s.Get(key)
	return ok && e.Receipts, ok && e.ReceiptsTS != 0, err
}

// learn applies change to key's entry (fresh when there was none) under
// the lock, and writes the file when change reports a change.
func (s *Store) learn(ctx context.Context, key identity.PublicKey, change func(e *Entry, fresh bool) bool) (bool, error) {
	if e, ok, err := s.Get(key); err == nil && ok && !change(&e, false) {
		return false, nil // nothing to write; checked again under the lock
	}
	changed := false
	err := statefile.UpdateContext(ctx, s.path, s.lock, func(data []byte, exists bool) ([]byte, error) {
		d, err := decode(data, exists)
		if err != nil {
			return nil, fmt.Errorf("%w (%s)", err, s.path)
		}
		k := key.String()
		e, ok := d.Keys[k]
		if !change(&e, !ok) {
			return nil, nil
		}
		if !ok && len(d.Keys) >= MaxKeys {
			forgetOldest(d.Keys)
		}
		e.Learned = identity.Millis(s.now())
		d.Keys[k] = e
		changed = true
		return identity.Marshal(d)
	})
	if err != nil {
		return false, fmt.Errorf("sealcap: learn: %w", err)
	}
	return changed, nil
}

// newer reports whether a statement signed at ts saying yes changes an
// entry that holds the statement signed at held saying was: it must be
// signed later and say something else. An entry that already says the
// same keeps its time, so a stream of sealed messages writes the file
// once, and a later withdrawal still wins over the statement the entry
// holds.
func newer(held uint64, was bool, ts uint64, yes bool) bool {
	return ts > held && yes != was
}

// forgetOldest removes the entry learned longest ago (the smallest key
// among equals, so the choice does not depend on map order).
func forgetOldest(keys map[string]Entry) {
	var victim string
	var at uint64
	for k, e := range keys {
		if victim == "" || e.Learned < at || (e.Learned == at && k < victim) {
			victim, at = k, e.Learned
		}
	}
	delete(keys, victim)
}

// LearnAnnouncement records the capabilities list of a, an announcement
// whose signatures verify, when it has one; it reports whether it
// changed anything. An announcement without a signed list says nothing.
func (s *Store) LearnAnnouncement(ctx context.Context, key identity.PublicKey, ts uint64, caps []string, signed bool) (bool, error) {
	if !signed {
		return false, nil
	}
	a, err := s.Learn(ctx, key, ts, identity.HasCap(caps, identity.CapSealed))
	if err != nil {
		return a, err
	}
	b, err := s.LearnReceipts(ctx, key, ts, identity.HasCap(caps, identity.CapReceipts))
	return a || b, err
}

// Payload returns the /send payload of m, a message signed by signer:
// when the file says m's recipient accepts sealed messages, the JSON of
// the envelope that seals m to it ([seal.SealMessage]), and sealed true;
// otherwise plain, m's JSON exactly as it would go without sealing. A file
// that cannot be read is an error rather than plaintext: a key once known
// to seal is never sent plaintext because its entry could not be read.
func (s *Store) Payload(signer *identity.Signer, m *identity.Message, plain []byte) (payload []byte, sealed bool, err error) {
	to, err := identity.ParsePublicKey(m.To)
	if err != nil {
		return nil, false, fmt.Errorf("sealcap: recipient: %w", err)
	}
	yes, err := s.Seals(to)
	if err != nil {
		return nil, false, err
	}
	if !yes {
		return plain, false, nil
	}
	e, err := seal.SealMessage(signer, m, nil)
	if err != nil {
		return nil, false, err
	}
	b, err := e.MarshalJSON()
	return b, err == nil, err
}
