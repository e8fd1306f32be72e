//go:build !unix

package statefile

// syncDir does nothing: Windows offers no portable way to sync a directory,
// so the rename's durability is left to the filesystem.
func syncDir(string) error { return nil }
