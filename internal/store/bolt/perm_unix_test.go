//go:build unix

package bolt

import (
	"log/slog"
	"os"
	"strings"
	"testing"

	"github.com/interlink-go/interlink/internal/store"
	"github.com/interlink-go/interlink/internal/testutil"
)

// An existing database file that group or others can read is made private
// with a warning; one that is private already is left alone, silently.
func TestBoltTightensReadableFile(t *testing.T) {
	t.Parallel()
	for _, mode := range []os.FileMode{0o644, 0o640, 0o604, 0o666, 0o600, 0o400} {
		t.Run(mode.String(), func(t *testing.T) {
			path := newBoltPath(t)
			openBolt(t, path, nil).Close()
			if err := os.Chmod(path, mode); err != nil {
				t.Fatal(err)
			}
			var logs testutil.LockedBuffer
			openBolt(t, path, &Options{Options: store.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))}})
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			warned := strings.Contains(logs.String(),
				`level=WARN msg="database file was readable by other users; its mode is now 0600" db=`+path+` was=`+mode.String())
			if mode&0o077 != 0 {
				if fi.Mode().Perm() != 0o600 || !warned {
					t.Errorf("mode %v, warned %v; want 0600 and a warning in:\n%s", fi.Mode().Perm(), warned, logs.String())
				}
				return
			}
			if fi.Mode().Perm() != mode || logs.String() != "" {
				t.Errorf("a private file became %v, with logs:\n%s", fi.Mode().Perm(), logs.String())
			}
		})
	}
}
