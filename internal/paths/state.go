package paths

import (
	"errors"
	"path/filepath"

	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/route"
	"github.com/interlink-go/interlink/internal/statefile"
)

// Kind names one kind of state under the state root; it is the first folder
// of the kind's files.
type Kind string

// The kinds of state. Those kept per identity and session are
// <root>/<kind>/<key>/<session>.json ([SessionFile]); those kept per session
// alone are named <root>/<kind>/<session> ([SessionPath]).
const (
	Mailbox Kind = "mailbox" // inbound messages, per identity and session
	Outbox  Kind = "outbox"  // outbound messages, per identity and session
	Pairing Kind = "pairing" // pairing requests, per identity and session
	Budget  Kind = "budget"  // wake-up and send counts, per identity and session
	Failed  Kind = "failed"  // failed Codex deliveries, per identity and thread
	Inbox   Kind = "inbox"   // the notice inbox, per session
	Turn    Kind = "turn"    // the operator's last turn, per session
	Task    Kind = "task"    // the open task's markers, per session
	// Receipts owed to senders, and receipts heard about sent messages,
	// per identity and session (package e2e).
	ReceiptsOwed  Kind = "receipts-owed"
	ReceiptsHeard Kind = "receipts-heard"
)

// ErrNoStateRoot means a state file was asked for under an empty state
// root, which would put it in the working folder.
var ErrNoStateRoot = errors.New("paths: empty state root")

// File is a state file and the sidecar files beside it. The zero value is
// not a file; get one from [SessionFile].
type File struct {
	path string
}

// SessionFile returns the state file of kind for the identity own and the
// given session under root: <root>/<kind>/<own key>/<session>.json. The
// session id becomes a file name, so it must pass [route.ValidateSession]
// (the error then wraps [route.ErrInvalidSession]); an empty root is
// [ErrNoStateRoot]. Nothing is created.
func SessionFile(root string, kind Kind, own identity.PublicKey, session string) (File, error) {
	if err := check(root, session); err != nil {
		return File{}, err
	}
	return File{path: filepath.Join(root, string(kind), own.String(), session+".json")}, nil
}

// SessionPath returns <root>/<kind>/<session>, the base name of the state of
// kind that is kept per session alone (the notice inbox adds its
// extensions, the turn is this file, the task markers are in this folder).
// It makes the checks of [SessionFile].
func SessionPath(root string, kind Kind, session string) (string, error) {
	if err := check(root, session); err != nil {
		return "", err
	}
	return filepath.Join(root, string(kind), session), nil
}

// check makes the checks every state file's opener makes.
func check(root, session string) error {
	if root == "" {
		return ErrNoStateRoot
	}
	return route.ValidateSession(session)
}

// Path returns the state file itself.
func (f File) Path() string { return f.path }

// Dir returns the folder of the state file, shared by the identity's
// sessions.
func (f File) Dir() string { return filepath.Dir(f.path) }

// Lock returns the lock file that guards the state file,
// <session>.lock beside it.
func (f File) Lock() string { return f.Sidecar("lock") }

// Sidecar returns the file beside the state file with the extension ext in
// place of .json: <session>.<ext> (see [statefile.LockPath]).
func (f File) Sidecar(ext string) string { return statefile.LockPath(f.path, ext) }
