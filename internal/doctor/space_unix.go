//go:build linux || darwin

package doctor

import "syscall"

// writable reports why this process cannot create files in dir, if it
// cannot. It asks the system instead of trying, so nothing is created.
func writable(dir string) error {
	return syscall.Access(dir, 0x2) // W_OK
}

// freeSpace returns the bytes available to this user on dir's file system.
func freeSpace(dir string) (uint64, bool) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, false
	}
	return uint64(st.Bavail) * uint64(st.Bsize), true
}
