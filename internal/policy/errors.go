package policy

import (
	"errors"
	"fmt"
	"strings"

	"github.com/interlink-go/interlink/internal/identity"
)

// Errors returned by this package, grouped by the phase that reports them.
// Check them with [errors.Is]; messages carry the detail.
var (
	// Loading peers.json.

	// ErrMissing reports that peers.json does not exist. The file is never
	// created implicitly; a file holding {} is a valid empty policy.
	ErrMissing = errors.New("peers.json does not exist")
	// ErrInvalid reports a peers.json that breaks the format; the whole
	// file is rejected. The message says what is wrong.
	ErrInvalid = errors.New("invalid peers.json")
	// ErrDuplicateKey reports one key listed under two petnames. It comes
	// wrapped together with ErrInvalid.
	ErrDuplicateKey = errors.New("same key under two petnames")
	// ErrDuplicateName reports a petname that appears twice in the JSON
	// object. It comes wrapped together with ErrInvalid.
	ErrDuplicateName = errors.New("petname appears twice")

	// Changing peers.json.

	// ErrInvalidName reports a petname that is empty, blank, invisible or
	// not valid UTF-8.
	ErrInvalidName = errors.New("invalid petname")
	// ErrReservedName reports a petname that [IsReserved] refuses.
	ErrReservedName = errors.New("reserved petname")
	// ErrSmallOrderKey reports a key of small order, which can never sign
	// a message that verifies, so listing it would be pointless.
	ErrSmallOrderKey = errors.New("key has small order and can never sign a valid message")
	// ErrConflict is what a [ConflictError] unwraps to.
	ErrConflict = errors.New("peer conflict")

	// Resolving names.

	// ErrUnknownPeer reports a target that names no peer or roster entry.
	ErrUnknownPeer = errors.New("unknown peer")
	// ErrAmbiguous is what an [AmbiguousError] unwraps to.
	ErrAmbiguous = errors.New("ambiguous peer")
)

// ConflictError reports an add that would give a listed key a second
// petname, or move an existing petname to another key. Nothing was changed.
//
// When the key is already listed, ExistingName is its petname and
// ExistingKey equals Key. When the petname is taken by another key,
// ExistingName equals Name and ExistingKey is that other key.
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

func (e *ConflictError) Error() string {
	if e.KeyListed() {
		return fmt.Sprintf("key %s is already listed as %q; a key has one petname, remove %q first to list it as %q",
			e.Key, e.ExistingName, e.ExistingName, e.Name)
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
