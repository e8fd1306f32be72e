package presence

import (
	"os"
	"path/filepath"

	"github.com/interlink-go/interlink/internal/identity"
)

// Describe returns the descriptor of session sessionID working in cwd.
// Cwd is kept as given. GitRoot is the base name of the nearest directory,
// starting with cwd itself and walking up, that holds an entry named ".git";
// the entry may be a directory or a file (as in worktrees and submodules).
// GitRoot is empty when there is no such directory or it has no base name
// (the file system root). The summary starts empty.
func Describe(sessionID, cwd string) identity.SessionInfo {
	return identity.SessionInfo{SessionID: sessionID, Cwd: cwd, GitRoot: gitRoot(cwd)}
}

// gitRoot returns the base name of the nearest ancestor of dir, dir
// included, that contains an entry named ".git", or "" if none does.
func gitRoot(dir string) string {
	if dir == "" {
		return ""
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return ""
	}
	for {
		// Lstat: a ".git" symlink counts as an entry even if it dangles.
		if _, err := os.Lstat(filepath.Join(dir, ".git")); err == nil {
			if filepath.Dir(dir) == dir {
				return "" // the root has no base name
			}
			return filepath.Base(dir)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}
