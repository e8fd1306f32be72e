package target

import (
	"bufio"
	"os"
	"runtime"
	"strconv"
	"strings"
)

// readStatusKB returns the field of /proc/PID/status (pid 0 for this
// process) named by key, with its colon (VmRSS: for the resident set
// size), in bytes. It returns -1 where there is no such file (systems
// other than Linux) or it cannot be read.
func readStatusKB(pid int, key string) int64 {
	if runtime.GOOS != "linux" {
		return -1
	}
	name := "/proc/self/status"
	if pid > 0 {
		name = "/proc/" + strconv.Itoa(pid) + "/status"
	}
	f, err := os.Open(name)
	if err != nil {
		return -1
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// VmRSS:	   12345 kB
		rest, ok := strings.CutPrefix(sc.Text(), key)
		if !ok {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
		if err != nil {
			return -1
		}
		return kb << 10
	}
	return -1
}
