//go:build !windows

package statefile

import "os"

// replace renames tmp over path. POSIX rename replaces the target
// atomically even while other processes have it open.
func replace(tmp, path string) error { return os.Rename(tmp, path) }
