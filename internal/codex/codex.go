// Package codex holds what the agent needs to serve a Codex CLI session: the
// thread id rule of session binding, finding the codex executable, and the
// store of notices and messages that could not be handed to `codex queue`.
//
// A Codex session has no id of its own when its MCP server starts. The
// session's trusted lifecycle hooks call the bind_codex_session tool with
// the thread's UUID, and that UUID becomes the session id: the agent's
// route, mailbox and pairing files are then those of the thread.
package codex

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// ErrBadThread means a thread id is not a full UUID.
var ErrBadThread = errors.New("codex: the current Codex thread's full UUID is expected (36 characters, as 8-4-4-4-12 hex digits)")

// ValidThread checks that id is a thread UUID: 36 bytes, '-' at offsets 8,
// 13, 18 and 23, and ASCII hex digits (either case) everywhere else. The
// version is not checked.
func ValidThread(id string) error {
	if len(id) != 36 {
		return ErrBadThread
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return ErrBadThread
			}
		default:
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
				return ErrBadThread
			}
		}
	}
	return nil
}

// ErrShim means only a batch-file shim of codex was found on Windows, which
// cannot be given the notice text safely.
var ErrShim = errors.New("codex: only a .cmd or .bat shim of codex was found; cmd.exe cannot be given line breaks and quotes safely. " +
	"Set INTERLINK_CODEX_BIN to the native codex.exe")

// Lookup finds the codex executable for bin (a name or a path) the way the
// agent runs it. goos is the target system (runtime.GOOS); lookPath finds a
// name on PATH (exec.LookPath) and exists reports whether a file exists.
//
// On Windows only a native executable is accepted: when the name resolves
// to a .cmd or .bat file, a codex.exe beside it (as npm installs place it
// under node_modules) is used if present, else the error is [ErrShim].
func Lookup(bin, goos string, lookPath func(string) (string, error), exists func(string) bool) (string, error) {
	p, err := lookPath(bin)
	if err != nil {
		return "", fmt.Errorf("codex: %q not found: %w", bin, err)
	}
	if goos != "windows" {
		return p, nil
	}
	ext := strings.ToLower(filepath.Ext(p))
	if ext == ".exe" || ext == ".com" {
		return p, nil
	}
	if ext == ".cmd" || ext == ".bat" {
		dir := filepath.Dir(p)
		for _, c := range []string{
			filepath.Join(dir, "codex.exe"),
			filepath.Join(dir, "node_modules", "@openai", "codex", "bin", "codex.exe"),
		} {
			if exists(c) {
				return c, nil
			}
		}
		return "", ErrShim
	}
	return "", fmt.Errorf("%w (%s is not a native executable)", ErrShim, p)
}

// LookupHere is [Lookup] for the running system.
func LookupHere(bin, goos string) (string, error) {
	return Lookup(bin, goos, exec.LookPath, func(p string) bool {
		st, err := os.Stat(p)
		return err == nil && !st.IsDir()
	})
}
