package target

import (
	"bufio"
	"errors"
	"os"
	"strconv"
	"strings"
	"time"
)

// userHZ is the unit of the times in /proc/PID/stat: Linux reports them in
// clock ticks of 1/100 s (USER_HZ) on every architecture Go supports.
const userHZ = 100

// CPUTime returns the processor time the process has used so far, user
// and system together, from /proc/PID/stat, in steps of 10 ms.
func (p *Process) CPUTime() (time.Duration, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(p.PID()) + "/stat")
	if err != nil {
		return 0, err
	}
	return parseStatCPU(string(b))
}

// parseStatCPU returns utime+stime of a /proc/PID/stat line. The command
// name, in parentheses, may hold spaces and parentheses itself, so the
// fields are counted from the last ')'.
func parseStatCPU(stat string) (time.Duration, error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, errors.New("/proc stat: no command name")
	}
	// After the name: state (field 3) … utime (14) and stime (15).
	f := strings.Fields(stat[i+1:])
	if len(f) < 13 {
		return 0, errors.New("/proc stat: too few fields")
	}
	var ticks int64
	for _, s := range f[11:13] {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 {
			return 0, errors.New("/proc stat: bad cpu time " + strconv.Quote(s))
		}
		ticks += n
	}
	return time.Duration(ticks) * (time.Second / userHZ), nil
}

// FileLimit returns the process's soft limit on open files, from
// /proc/PID/limits; false where that cannot be read or says "unlimited".
func (p *Process) FileLimit() (uint64, bool) {
	f, err := os.Open("/proc/" + strconv.Itoa(p.PID()) + "/limits")
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// Max open files            20000                20000                files
		rest, ok := strings.CutPrefix(sc.Text(), "Max open files")
		if !ok {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			return 0, false
		}
		n, err := strconv.ParseUint(fields[0], 10, 64)
		return n, err == nil
	}
	return 0, false
}
