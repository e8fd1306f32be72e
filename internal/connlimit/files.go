package connlimit

// fileReserve is how many open files a capacity derived from the
// open-file limit leaves to the process for everything but connections:
// the listener, the poller, standard streams, a database file, the
// connections to other servers, reads of /proc.
const fileReserve = 64

// maxCapacity bounds a capacity derived from the open-file limit, which
// may be huge or unlimited.
const maxCapacity = 1 << 20

// UnknownCapacity is the capacity [FileCapacity] gives where the open-file
// limit is unknown.
const UnknownCapacity = 8192

// FileCapacity returns the process's open-file limit and the [Capacity]
// it leaves for connections. known is false where the
// limit cannot be read; the capacity is then [UnknownCapacity].
//
// Go raises its soft limit to the hard limit when it starts, so on Unix
// this is the hard limit the process was started with (systemd's
// LimitNOFILE, or ulimit -Hn).
func FileCapacity() (files uint64, capacity int, known bool) {
	files, known = fileLimit()
	if !known {
		return 0, UnknownCapacity, false
	}
	return files, Capacity(files), true
}

// Capacity returns the capacity for connections that an open-file limit
// of files leaves: the limit less 64 files kept for everything else, or
// half the limit when that is more.
func Capacity(files uint64) int {
	c := max(files/2, files-min(files, fileReserve))
	return int(max(min(c, maxCapacity), 1))
}
