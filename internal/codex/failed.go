package codex

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/paths"
	"github.com/interlink-go/interlink/internal/statefile"
)

// MaxFailed is the most entries a failed-delivery store holds.
const MaxFailed = 64

var (
	// ErrFull means the store holds MaxFailed entries.
	ErrFull = errors.New("codex: saved-failure storage is full; read and discard recovered entries with failed_deliveries")
	// ErrNotFound means no entry has the given id.
	ErrNotFound = errors.New("codex: unknown failure id")
	// ErrCorrupt means the store's file does not hold a list of entries.
	ErrCorrupt = errors.New("codex: corrupt failed-delivery file")
)

// Entry is one saved failure: the text that could not be queued and why.
type Entry struct {
	ID     string `json:"id"`
	MsgID  string `json:"msg_id"`
	Sender string `json:"sender"`
	Text   string `json:"text"`
	Reason string `json:"reason"`
	Notice bool   `json:"notice"`
}

// Failed is the failed-delivery store of one identity and thread:
// failed/<key>/<thread>.json under the state root, with its lock beside it.
type Failed struct {
	path, lock string
}

// OpenFailed returns the store of thread for own under stateRoot. Nothing
// is created until the first save.
func OpenFailed(stateRoot string, own identity.PublicKey, thread string) (*Failed, error) {
	if err := ValidThread(thread); err != nil {
		return nil, err
	}
	file, err := paths.SessionFile(stateRoot, paths.Failed, own, thread)
	if err != nil {
		return nil, fmt.Errorf("codex: %w", err)
	}
	return &Failed{path: file.Path(), lock: file.Lock()}, nil
}

// Path returns the store's file.
func (f *Failed) Path() string { return f.path }

func decodeEntries(data []byte, exists bool) ([]Entry, error) {
	if !exists {
		return nil, nil
	}
	var es []Entry
	if err := json.Unmarshal(data, &es); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	return es, nil
}

// List returns the entries, oldest first.
func (f *Failed) List() ([]Entry, error) {
	data, ok, err := statefile.Read(f.path)
	if err != nil {
		return nil, err
	}
	return decodeEntries(data, ok)
}

// Get returns the entry with id.
func (f *Failed) Get(id string) (Entry, error) {
	es, err := f.List()
	if err != nil {
		return Entry{}, err
	}
	for _, e := range es {
		if e.ID == id {
			return e, nil
		}
	}
	return Entry{}, fmt.Errorf("%w %q", ErrNotFound, id)
}

// update runs fn on the entries under the lock and saves the result when fn
// reports a change.
func (f *Failed) update(fn func([]Entry) ([]Entry, bool, error)) error {
	return statefile.Update(f.path, f.lock, func(data []byte, exists bool) ([]byte, error) {
		es, err := decodeEntries(data, exists)
		if err != nil {
			return nil, err
		}
		out, changed, err := fn(es)
		if err != nil || !changed {
			return nil, err
		}
		if out == nil {
			out = []Entry{}
		}
		return json.MarshalIndent(out, "", "  ")
	})
}

// Save adds e with a fresh id and returns it. An entry with the same msg_id
// and sender is not added again (its id is returned). A notice entry
// replaces any earlier notice entry. A full store is [ErrFull].
func (f *Failed) Save(e Entry) (string, error) {
	var id string
	err := f.update(func(es []Entry) ([]Entry, bool, error) {
		for _, x := range es {
			if x.MsgID == e.MsgID && x.Sender == e.Sender {
				id = x.ID
				return nil, false, nil
			}
		}
		if e.Notice {
			kept := es[:0]
			for _, x := range es {
				if !x.Notice {
					kept = append(kept, x)
				}
			}
			es = kept
		}
		if len(es) >= MaxFailed {
			return nil, false, ErrFull
		}
		var b [4]byte
		if _, err := rand.Read(b[:]); err != nil {
			return nil, false, err
		}
		e.ID = hex.EncodeToString(b[:])
		id = e.ID
		return append(es, e), true, nil
	})
	return id, err
}

// Remove deletes the entry with id; an unknown id is [ErrNotFound].
func (f *Failed) Remove(id string) error {
	return f.update(func(es []Entry) ([]Entry, bool, error) {
		for i, x := range es {
			if x.ID == id {
				return append(es[:i], es[i+1:]...), true, nil
			}
		}
		return nil, false, fmt.Errorf("%w %q", ErrNotFound, id)
	})
}

// ClearNotices deletes every notice entry: a later notice reached the host,
// so the saved one is obsolete.
func (f *Failed) ClearNotices() error {
	return f.update(func(es []Entry) ([]Entry, bool, error) {
		kept := es[:0]
		for _, x := range es {
			if !x.Notice {
				kept = append(kept, x)
			}
		}
		return kept, len(kept) != len(es), nil
	})
}
