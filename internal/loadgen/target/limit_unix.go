//go:build unix

package target

import (
	"syscall"
	"time"
)

// RaiseFileLimit raises this process's soft limit on open files to need,
// as far as the hard limit allows, and returns the soft and hard limits
// it leaves; a need of 0 only reads them. A process started afterwards
// inherits that soft limit: the Go runtime raises its own soft limit at
// start-up but gives children the original one, unless the program has
// set the limit itself, as this does whenever need is above 0.
func RaiseFileLimit(need uint64) (soft, hard uint64, ok bool) {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 0, 0, false
	}
	if need > 0 {
		set := rl
		set.Cur = max(rl.Cur, min(need, rl.Max))
		if syscall.Setrlimit(syscall.RLIMIT_NOFILE, &set) == nil {
			rl = set
		}
	}
	return uint64(rl.Cur), uint64(rl.Max), true
}

// SelfCPU returns the processor time this process has used, user and
// system together, or -1 where it cannot tell.
func SelfCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return -1
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
