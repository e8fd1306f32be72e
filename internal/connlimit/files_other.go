//go:build !unix

package connlimit

// fileLimit reports that this system's open-file limit is unknown.
func fileLimit() (uint64, bool) { return 0, false }
