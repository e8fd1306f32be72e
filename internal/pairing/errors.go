package pairing

import (
	"errors"
	"fmt"
)

// Errors returned by this package, grouped by the step that reports them.
// Check them with [errors.Is].
var (
	// ErrCorrupt reports a state file that cannot be read as pairing state:
	// not JSON, a missing or mistyped list, or a malformed request. The file
	// is left as it is; changes fail until an operator repairs or removes
	// it.
	ErrCorrupt = errors.New("pairing: corrupt state file")

	// ErrNoReplyRoute reports a knock whose reply_to does not name a session
	// of the signing key. Such a knock is discarded: without that route the
	// confirmation could not go back to the session that asked.
	ErrNoReplyRoute = errors.New("pairing: knock has no usable reply_to route")

	// ErrInboundFull reports a knock from a new key while [InboundCap]
	// requests are pending. The knock is not stored and nothing was
	// changed: a request already pending is never pushed out by a newer
	// one, so a flood of knocks from fresh keys cannot hide it.
	ErrInboundFull = errors.New("pairing: the list of pending requests is full")

	// ErrNotFound reports that no pending inbound request matches the key or
	// fingerprint given.
	ErrNotFound = errors.New("pairing: no pending request")
	// ErrAmbiguous reports a fingerprint shared by several pending requests.
	ErrAmbiguous = errors.New("pairing: ambiguous fingerprint; use the full key")

	// ErrNotPending reports that the request being accepted is no longer
	// pending as it was read: it was accepted, rejected or refreshed by a
	// repeated knock meanwhile. Nothing was changed.
	ErrNotPending = errors.New("pairing: request is no longer pending; review the pending requests again")
	// ErrConfirmationPending reports an acceptance whose peer was authorized
	// but whose change to the state file could not be saved. It is wrapped by every
	// [ConfirmationPendingError].
	ErrConfirmationPending = errors.New("pairing: peer authorized but confirmation not saved")

	// ErrBadRoute reports a route that a pairing message cannot use: a bare
	// key where one exact session is needed, or a route of another key.
	ErrBadRoute = errors.New("pairing: unusable route")
	// ErrBadJob reports a pairing message that must not be sent: one that
	// is not the knock or confirmation asked for, or a job an earlier
	// version queued whose message does not verify, was not signed by the
	// own key, is not a pairing kind, or whose route does not name a
	// session of the recipient.
	ErrBadJob = errors.New("pairing: bad queued job")
)

// ConfirmationPendingError is returned by [Store.Accept] when the peer was
// authorized but the state file could not be written afterwards. The peer is
// trusted locally, the request is still pending and the confirmation was
// withdrawn from the outbox, so the requester does not know yet. Calling Accept again for the
// same request, once storage works, finishes the job; that is safe because
// the authorization is expected to be idempotent.
type ConfirmationPendingError struct {
	// Key is the requester's key.
	Key string
	// Err is the write error.
	Err error
}

// Error says that the peer is authorized and why the confirmation was not
// saved.
func (e *ConfirmationPendingError) Error() string {
	return fmt.Sprintf("%v for %s: %v", ErrConfirmationPending, e.Key, e.Err)
}

// Unwrap returns [ErrConfirmationPending] and the write error, so both match
// with [errors.Is].
func (e *ConfirmationPendingError) Unwrap() []error {
	return []error{ErrConfirmationPending, e.Err}
}
