//go:build !unix

package inbox

// parentWatch is a no-op where a process's parent cannot be watched
// portably: the listener then ends at its renewal time.
type parentWatch struct{}

func newParentWatch() parentWatch { return parentWatch{} }

func (parentWatch) gone() bool { return false }
