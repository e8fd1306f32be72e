//go:build !unix

package loadgen

import "time"

// raiseFileLimit reports that this system's open-file limit is unknown.
func raiseFileLimit(need uint64) (soft, hard uint64, ok bool) { return 0, 0, false }

// selfCPU reports that this system's processor time is unknown.
func selfCPU() time.Duration { return -1 }
