package target

import "fmt"

// CheckOpenFiles reports an error when need exceeds this process's soft
// limit on open files (which the Go runtime raises to the hard limit at
// start-up), saying what to do about it; nil where the limit is unknown.
func CheckOpenFiles(need int) error {
	limit, _, ok := RaiseFileLimit(0)
	if !ok || uint64(need) <= limit {
		return nil
	}
	return fmt.Errorf("about %d open files needed, the limit is %d: raise it (ulimit -n) or run the bus as its own process and pass --url", need, limit)
}
