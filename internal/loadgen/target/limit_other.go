//go:build !unix

package target

import "time"

// RaiseFileLimit reports that this system's open-file limit is unknown.
func RaiseFileLimit(need uint64) (soft, hard uint64, ok bool) { return 0, 0, false }

// SelfCPU reports that this system's processor time is unknown.
func SelfCPU() time.Duration { return -1 }
