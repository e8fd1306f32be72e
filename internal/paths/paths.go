// Package paths finds the folders interlink keeps its files in: the user's
// home, the default key and peers files under it, the state root, and where
// each kind of state lies under that root.
//
// The functions that find a folder take the environment as a lookup
// function, so that the server, the Stop-hook listener and the reminder hook
// resolve the same paths from the same environment, and tests can supply
// their own. A variable set to the empty string counts as unset.
//
// # State layout
//
// Every package that keeps a session's state asks [SessionFile] or
// [SessionPath] where it lies, so the layout is written once:
//
//	<root>/mailbox/<key>/<session>.json   and its sidecars (.lock, ...)
//	<root>/outbox/<key>/<session>.json
//	<root>/pairing/<key>/<session>.json
//	<root>/budget/<key>/<session>.json
//	<root>/failed/<key>/<thread>.json     Codex deliveries that failed
//	<root>/inbox/<session>.jsonl          and .cursor, .lock, .io-lock
//	<root>/turn/<session>
//	<root>/task/<session>/
//
// <key> is the identity's public key, <session> a session id that passed
// [route.ValidateSession]. A state file's lock is the sidecar
// <session>.lock ([File.Lock]), named as [statefile.LockPath] names every
// sidecar.
package paths

import (
	"errors"
	"path/filepath"
)

// ErrNoHome means neither HOME nor USERPROFILE is set, so no default path
// under the home folder can be built.
var ErrNoHome = errors.New("paths: neither HOME nor USERPROFILE is set")

// Home returns $HOME, else $USERPROFILE.
func Home(getenv func(string) string) (string, error) {
	if h := getenv("HOME"); h != "" {
		return h, nil
	}
	if h := getenv("USERPROFILE"); h != "" {
		return h, nil
	}
	return "", ErrNoHome
}

// ConfigFile returns <home>/.config/interlink/<name>, the default place of
// the key file (id.key) and the peer policy (peers.json).
func ConfigFile(getenv func(string) string, name string) (string, error) {
	h, err := Home(getenv)
	if err != nil {
		return "", err
	}
	return filepath.Join(ConfigDir(h), name), nil
}

// ConfigDir returns the folder of interlink's configuration under the home
// folder home: <home>/.config/interlink.
func ConfigDir(home string) string {
	return filepath.Join(home, ".config", "interlink")
}

// StateRoot returns the state root: explicit when it is not empty (the
// --state-dir flag or INTERLINK_STATE_DIR), else $XDG_STATE_HOME/interlink,
// else <home>/.local/state/interlink.
func StateRoot(getenv func(string) string, explicit string) (string, error) {
	if explicit != "" {
		return explicit, nil
	}
	if x := getenv("XDG_STATE_HOME"); x != "" {
		return filepath.Join(x, "interlink"), nil
	}
	h, err := Home(getenv)
	if err != nil {
		return "", err
	}
	return filepath.Join(h, ".local", "state", "interlink"), nil
}
