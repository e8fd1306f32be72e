//go:build linux

package bolt

import (
	"syscall"
	"testing"
	"time"
)

// These three tell whether the cost of [BenchmarkFileSyncBehindHTTP] above
// the sum of its parts comes from the disk or from any wait that puts the
// handler's thread to sleep. Each holds the first of three requests for
// blockFor, once by sleeping in a system call, as an fsync does, and once
// by spinning, which keeps the thread and its CPU busy. Where the sleeping
// round trip costs far more than [BenchmarkSleepingSyscall] plus
// [BenchmarkThreeRequests], and the spinning one about blockFor plus
// [BenchmarkThreeRequests], it is waking idle threads and CPUs after the
// wait that costs, whatever the wait was for.

const blockFor = 120 * time.Microsecond

// sleepInSyscall puts the calling thread to sleep for blockFor.
func sleepInSyscall() error {
	ts := syscall.NsecToTimespec(int64(blockFor))
	return syscall.Nanosleep(&ts, nil)
}

// BenchmarkSleepingSyscall is one sleepInSyscall, alone.
func BenchmarkSleepingSyscall(b *testing.B) {
	for b.Loop() {
		if err := sleepInSyscall(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSleepingSyscallBehindHTTP is [BenchmarkThreeRequests] with the
// first handler calling sleepInSyscall.
func BenchmarkSleepingSyscallBehindHTTP(b *testing.B) {
	threeRequests(b, sleepInSyscall)
}

// BenchmarkSpinningBehindHTTP is [BenchmarkThreeRequests] with the first
// handler spinning for blockFor.
func BenchmarkSpinningBehindHTTP(b *testing.B) {
	threeRequests(b, func() error {
		for start := time.Now(); time.Since(start) < blockFor; {
		}
		return nil
	})
}
