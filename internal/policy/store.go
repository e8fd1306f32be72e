package policy

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"

	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/statefile"
	"github.com/interlink-go/interlink/internal/untrusted"
)

// Store is peers.json on disk. Its fields are fixed by [Open], so a Store is
// safe for concurrent use; other goroutines and processes may change the
// file at any time, and every method reads it again.
type Store struct {
	path     string // absolute path with symlinks resolved
	lockPath string // the sidecar lock beside path
}

// Open opens the peers.json at path. The file must exist; a missing file
// is an error wrapping [ErrMissing], and a file that does not parse is an
// error wrapping [ErrInvalid].
//
// The real path is resolved once, symlinks included, and used from then on:
// every session reaching the file through a different link then takes the
// same lock, peers.json.lock beside the real file.
func Open(path string) (*Store, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("policy: open %s: %w", path, err)
	}
	resolved, err := filepath.EvalSymlinks(abs)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s (a file containing {} is a valid empty policy)", ErrMissing, path)
	}
	if err != nil {
		return nil, fmt.Errorf("policy: open %s: %w", path, err)
	}
	s := &Store{path: resolved, lockPath: statefile.LockPath(resolved, "json.lock")}
	if _, err := s.read(); err != nil {
		return nil, err
	}
	return s, nil
}

// Path returns the real path of peers.json, symlinks resolved.
func (s *Store) Path() string { return s.path }

// LockPath returns the lock file that serializes changes to peers.json.
func (s *Store) LockPath() string { return s.lockPath }

// Load reads and parses peers.json again. It takes no lock: the file is only
// ever replaced by rename, so what it reads is one complete version. Call it
// for every use rather than keeping the result, so that changes made by
// other sessions take effect without a restart.
func (s *Store) Load() (*Policy, error) { return s.read() }

// read reads and parses the file without a lock.
func (s *Store) read() (*Policy, error) {
	data, exists, err := statefile.Read(s.path)
	if err != nil {
		return nil, fmt.Errorf("policy: %w", err) // it names the path
	}
	return s.decode(data, exists)
}

// decode parses the contents of the file as read. Its errors start with
// one of this package's sentinels, so the path follows them.
func (s *Store) decode(data []byte, exists bool) (*Policy, error) {
	if !exists {
		return nil, fmt.Errorf("%w: %s", ErrMissing, s.path)
	}
	p, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%w (in %s)", err, s.path)
	}
	return p, nil
}

// update runs change on a private copy of the current policy under the lock
// and writes the result. The file is rewritten even when change left the
// policy as it was, as other implementations do. If change (or reading the
// file) fails, nothing is written, and its error, which comes from this
// package and says what was refused, is returned as it is; a failure to
// lock or write the file is wrapped with the path.
func (s *Store) update(change func(p *Policy) error) error {
	var refused error
	err := statefile.Update(s.path, s.lockPath, func(data []byte, exists bool) ([]byte, error) {
		cur, err := s.decode(data, exists)
		if err == nil {
			next := cur.clone()
			if err = change(next); err == nil {
				return next.Marshal(), nil
			}
		}
		refused = err
		return nil, err
	})
	switch {
	case refused != nil:
		return refused
	case err != nil:
		return fmt.Errorf("policy: update %s: %w", s.path, err)
	}
	return nil
}

// Add lists key under the petname name.
//
// It refuses a name that [CheckPetname] refuses ([ErrInvalidName],
// [ErrReservedName]) and a key of small order ([ErrSmallOrderKey]). If key
// is already listed under another name, or name, or a name that reads
// alike ([Policy.Resembles]), already names another key, it returns a
// [*ConflictError] and changes nothing. Adding a pair that is already listed succeeds without a
// change.
func (s *Store) Add(name string, key identity.PublicKey) error {
	if err := checkAdd(name, key); err != nil {
		return err
	}
	return s.update(func(p *Policy) error { return add(p, name, key) })
}

// checkAdd checks what [Store.Add] refuses before looking at the file.
func checkAdd(name string, key identity.PublicKey) error {
	if err := CheckPetname(name); err != nil {
		return err
	}
	return checkKey(key)
}

// checkKey refuses keys that could never sign anything. Such a key admits
// nothing, so listing it can only be a mistake, and an operator deserves to
// hear that now rather than wonder later why the peer is never heard from.
func checkKey(key identity.PublicKey) error {
	if key.SmallOrder() {
		return fmt.Errorf("%w: %s", ErrSmallOrderKey, key)
	}
	return nil
}

// add applies [Store.Add] to p.
func add(p *Policy, name string, key identity.PublicKey) error {
	// A key has a single petname, so attribution of its messages is never
	// in doubt.
	if cur, ok := p.byKey[key]; ok {
		if cur == name {
			return nil
		}
		return fmt.Errorf("policy: %w", &ConflictError{Name: name, Key: key, ExistingName: cur, ExistingKey: key})
	}
	// A petname never changes hands: see the package documentation. Nor
	// does one that reads alike: a second "bob" in Cyrillic letters, or
	// "Bob", would show a newcomer's words under a name the operator
	// already trusts just as well.
	if e, ok := p.Resembles(name); ok {
		return fmt.Errorf("policy: %w", &ConflictError{Name: name, Key: key, ExistingName: e.Name, ExistingKey: e.Key})
	}
	p.put(name, key)
	return nil
}

// AddForPairing lists key under name on the side that asked to pair, once
// the other side accepted. If key is already listed, its petname stays and
// is returned, and nothing changes. Otherwise it behaves as [Store.Add],
// conflicts included, and returns name on success.
func (s *Store) AddForPairing(name string, key identity.PublicKey) (string, error) {
	var got string
	err := s.update(func(p *Policy) error {
		if cur, ok := p.byKey[key]; ok {
			got = cur
			return nil
		}
		if err := checkAdd(name, key); err != nil {
			return err
		}
		got = name
		return add(p, name, key)
	})
	if err != nil {
		return "", err
	}
	return got, nil
}

// AddAccepted lists key on the side that accepts a pairing request, under a
// petname derived from the name the requester claimed, and returns the
// petname used:
//
//   - if key is already listed, its petname stays and nothing changes;
//   - otherwise the claimed name is reduced to the characters a petname may
//     hold ([ReducePetname]); if that leaves it empty or reserved, the key's
//     fingerprint is used instead;
//   - if that name is taken by another key, or reads alike a name of
//     another key ([Policy.Resembles]: a Cyrillic "bоb", "Bob" or
//     "bob\u3164" beside "bob"), the first free of name-2, name-3, … is
//     used, with name cut so the whole stays within [PetnameLimit]
//     characters.
//
// The claimed name is chosen by a stranger, so it never takes over an
// existing petname; the suffix keeps both peers apart. A key of small order
// is refused ([ErrSmallOrderKey]).
func (s *Store) AddAccepted(claimed string, key identity.PublicKey) (string, error) {
	if err := checkKey(key); err != nil {
		return "", err
	}
	var got string
	err := s.update(func(p *Policy) error {
		if cur, ok := p.byKey[key]; ok {
			got = cur
			return nil
		}
		got = acceptedName(p, claimed, key)
		p.put(got, key)
		return nil
	})
	if err != nil {
		return "", err
	}
	return got, nil
}

// acceptedName picks the petname for key, which p does not list, from the
// claimed name as [Store.AddAccepted] describes.
func acceptedName(p *Policy, claimed string, key identity.PublicKey) string {
	base := ReducePetname(claimed)
	if CheckPetname(base) != nil {
		// Empty or reserved: the fingerprint, and failing that (it would
		// have to spell a reserved word) the key, stands for the name.
		base = key.Fingerprint()
		if CheckPetname(base) != nil {
			base = key.String()
		}
	}
	free := func(name string) bool {
		_, taken := p.Resembles(name)
		return !taken && CheckPetname(name) == nil
	}
	if free(base) {
		return base
	}
	// Terminates: p has finitely many names, and each reads alike only
	// finitely many candidates, whose digits differ.
	for n := 2; ; n++ {
		suffix := "-" + strconv.Itoa(n)
		name := untrusted.CapRunes(base, PetnameLimit-len(suffix)) + suffix
		if free(name) {
			return name
		}
	}
}

// Remove deletes the entry for the petname name, matched exactly, and
// reports whether there was one.
func (s *Store) Remove(name string) (bool, error) {
	var removed bool
	err := s.update(func(p *Policy) error {
		removed = p.remove(name)
		return nil
	})
	if err != nil {
		return false, err
	}
	return removed, nil
}
