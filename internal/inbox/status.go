package inbox

import (
	"errors"
	"io/fs"
	"os"

	"github.com/interlink-go/interlink/internal/runlock"
)

// Backlog returns how many complete records wait past the cursor, counting
// at most one batch ([MaxBatchLines]); more is true when there may be
// more. It changes nothing and creates nothing: an inbox that was never
// created has no backlog.
func (b *Inbox) Backlog() (records int, more bool, err error) {
	if _, err := os.Stat(b.path); errors.Is(err, fs.ErrNotExist) {
		return 0, false, nil
	}
	batch, err := b.Read()
	if err != nil {
		return 0, false, err
	}
	return len(batch.Lines), len(batch.Lines) == MaxBatchLines, nil
}

// Listening reports whether a listener holds the session's listener lock,
// that is, whether an `interlink-mcp wait` is waiting to wake the session.
// It never creates the lock file, and on Linux it only reads the kernel's
// list of locks, so it cannot get in the way of a listener that starts at
// the same moment. Elsewhere it tries the lock and gives it back at once; a
// listener starting in that instant would find it taken and leave the
// session to the next one.
func (b *Inbox) Listening() (bool, error) {
	return runlock.Held(b.lock)
}
