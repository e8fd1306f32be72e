package policy

import (
	"errors"
	"fmt"
	"strings"

	"github.com/interlink-go/interlink/internal/identity"
)

// Errors returned by this package, grouped by the phase that reports them.
// Check them with [errors.Is]; messages carry the detail. Like every
// sentinel of this module, each says the package's name first; the typed
// errors below leave it out, since they reach callers wrapped as
// "policy: …", and a caller that shows one to a person takes it out with
// [errors.As].
var (
	// Loading peers.json.

	// ErrMissing reports that peers.json does not exist. The file is never
	// created implicitly; a file holding {} is a valid empty policy.
	ErrMissing = errors.New("policy: peers.json does not exist")
	// ErrInvalid reports a peers.json that breaks the format; the whole
	// file is rejected. The message says what is wrong.
	ErrInvalid = errors.New("policy: invalid peers.json")
	// ErrDuplicateKey reports one key listed under two petnames. It wraps
	// ErrInvalid.
	ErrDuplicateKey = fmt.Errorf("%w: same key under two petnames", ErrInvalid)
	// ErrDuplicateName reports a petname that appears twice in the JSON
	// object. It wraps ErrInvalid.
	ErrDuplicateName = fmt.Errorf("%w: petname appears twice", ErrInvalid)

	// Changing peers.json.

	// ErrInvalidName is what a [PetnameError] unwraps to when the name
	// holds what a petname may not.
	ErrInvalidName = errors.New("policy: invalid petname")
	// ErrReservedName is what a [PetnameError] unwraps to when
	// [IsReserved] refuses the name.
	ErrReservedName = errors.New("policy: reserved petname")
	// ErrSmallOrderKey reports a key of small order, which can never sign
	// a message that verifies, so listing it would be pointless.
	ErrSmallOrderKey = errors.New("policy: key has small order and can never sign a valid message")
	// ErrConflict is what a [ConflictError] unwraps to.
	ErrConflict = errors.New("policy: peer conflict")

	// Resolving names.

	// ErrUnknownPeer is what an [UnknownPeerError] unwraps to.
	ErrUnknownPeer = errors.New("policy: unknown peer")
	// ErrAmbiguous is what an [AmbiguousError] unwraps to.
	ErrAmbiguous = errors.New("policy: ambiguous peer")
)

// PetnameError says why a name cannot be a petname: see [CheckPetname].
type PetnameError struct {
	// Name is the name refused.
	Name string
	// Reserved is set when the name is a spelling of a reserved name; then
	// the error matches [ErrReservedName], otherwise [ErrInvalidName].
	Reserved bool
	// Reason says what is wrong with the name, for a person to read.
	Reason string
}

func (e *PetnameError) Error() string {
	kind := "invalid petname"
	if e.Reserved {
		kind = "reserved petname"
	}
	return fmt.Sprintf("%s %q: %s", kind, e.Name, e.Reason)
}

// Unwrap returns [ErrReservedName] or [ErrInvalidName].
func (e *PetnameError) Unwrap() error {
	if e.Reserved {
		return ErrReservedName
	}
	return ErrInvalidName
}

// UnknownPeerError reports a target that names no peer, or no entry of the
// roster.
type UnknownPeerError struct {
	// Target is the text that was looked up.
	Target string
	// Want says what the target may be.
	Want string
	// Known lists the known petnames, when the target had to be one; it may
	// be empty.
	Known string
}

func (e *UnknownPeerError) Error() string {
	s := fmt.Sprintf("unknown peer %q: expected %s", e.Target, e.Want)
	if e.Known != "" {
		s += "; " + e.Known
	}
	return s
}

// Unwrap returns [ErrUnknownPeer].
func (e *UnknownPeerError) Unwrap() error { return ErrUnknownPeer }

// ConflictError reports an add that would give a listed key a second
// petname, or move an existing petname to another key. Nothing was changed.
//
// When the key is already listed, ExistingName is its petname and
// ExistingKey equals Key. When the petname is taken by another key,
// ExistingName equals Name and ExistingKey is that other key; when a
// petname that reads alike is ([Policy.Resembles]), ExistingName is that
// petname ([ConflictError.LooksAlike]).
type ConflictError struct {
	// Name and Key are what was asked for.
	Name string
	Key  identity.PublicKey
	// ExistingName and ExistingKey are the entry in the way.
	ExistingName string
	ExistingKey  identity.PublicKey
}

// KeyListed reports whether the conflict is about the key: it is already
// listed under another petname. Otherwise the petname names another key.
func (e *ConflictError) KeyListed() bool { return e.ExistingKey == e.Key }

// LooksAlike reports whether the conflict is with another key's petname
// that reads alike Name without being Name.
func (e *ConflictError) LooksAlike() bool { return !e.KeyListed() && e.ExistingName != e.Name }

func (e *ConflictError) Error() string {
	if e.KeyListed() {
		return fmt.Sprintf("key %s is already listed as %q; a key has one petname, remove %q first to list it as %q",
			e.Key, e.ExistingName, e.ExistingName, e.Name)
	}
	if e.LooksAlike() {
		return fmt.Sprintf("petname %q reads alike %q, which names key %s; choose a name that looks different for %s",
			e.Name, e.ExistingName, e.ExistingKey, e.Key)
	}
	return fmt.Sprintf("petname %q already names key %s; an existing petname is never reassigned, remove it first to use it for %s",
		e.Name, e.ExistingKey, e.Key)
}

// Unwrap returns [ErrConflict].
func (e *ConflictError) Unwrap() error { return ErrConflict }

// AmbiguousError reports a target that matches more than one distinct key.
type AmbiguousError struct {
	// Target is the text that was looked up.
	Target string
	// Keys are the matching keys, sorted by their text form.
	Keys []identity.PublicKey
}

func (e *AmbiguousError) Error() string {
	keys := make([]string, len(e.Keys))
	byFingerprint := true
	for i, k := range e.Keys {
		keys[i] = k.String()
		byFingerprint = byFingerprint && k.Fingerprint() == e.Target
	}
	hint := "use the full key or its 8-character fingerprint"
	if byFingerprint {
		hint = "use the full key"
	}
	return fmt.Sprintf("%q matches %d keys (%s); %s", e.Target, len(e.Keys), strings.Join(keys, ", "), hint)
}

// Unwrap returns [ErrAmbiguous].
func (e *AmbiguousError) Unwrap() error { return ErrAmbiguous }
