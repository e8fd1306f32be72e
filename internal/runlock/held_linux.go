package runlock

import (
	"bufio"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// held reports whether /proc/locks lists a lock on the file fi of path.
func held(path string, fi fs.FileInfo) (bool, error) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return false, fmt.Errorf("runlock: %s: no inode", path)
	}
	f, err := os.Open("/proc/locks")
	if err != nil {
		return false, err
	}
	defer f.Close()
	// Lines look like "1: FLOCK  ADVISORY  WRITE 1234 fd:01:5678 0 EOF";
	// the sixth field is major:minor:inode of the locked file, the major
	// and minor in hex.
	major, minor := uint64(st.Dev>>8&0xfff|st.Dev>>32&^0xfff), uint64(st.Dev&0xff|st.Dev>>12&^0xff)
	want := fmt.Sprintf("%02x:%02x:%d", major, minor, st.Ino)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 || fields[1] == "->" {
			continue // a waiter, listed under the lock it waits for
		}
		if sameFile(fields[5], want, st.Ino) {
			return true, nil
		}
	}
	return false, sc.Err()
}

// sameFile compares a /proc/locks file field with want, tolerating the
// kernel's choice of zero padding for the device numbers.
func sameFile(field, want string, ino uint64) bool {
	if field == want {
		return true
	}
	parts := strings.Split(field, ":")
	wparts := strings.Split(want, ":")
	if len(parts) != 3 || parts[2] != strconv.FormatUint(ino, 10) {
		return false
	}
	for i := range 2 {
		a, err1 := strconv.ParseUint(parts[i], 16, 64)
		b, err2 := strconv.ParseUint(wparts[i], 16, 64)
		if err1 != nil || err2 != nil || a != b {
			return false
		}
	}
	return true
}
