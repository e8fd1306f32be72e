//go:build unix

package bolt

import (
	"log/slog"
	"os"
)

// tightenMode makes f, the database file at path, readable and writable by
// its owner only, and warns when it was not: message bodies are stored as
// they arrived.
func tightenMode(f *os.File, path string, fi os.FileInfo, log *slog.Logger) {
	mode := fi.Mode().Perm()
	if mode&0o077 == 0 {
		return
	}
	if err := f.Chmod(0o600); err != nil {
		log.Warn("database file is readable by other users and could not be made private",
			"db", path, "mode", mode.String(), "error", err)
		return
	}
	log.Warn("database file was readable by other users; its mode is now 0600",
		"db", path, "was", mode.String())
}
