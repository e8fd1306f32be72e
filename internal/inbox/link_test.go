//go:build unix

package inbox

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// Every inbox file refuses to be reached through a symbolic link: the
// records file for appends, reads, creation and commits, the cursor for
// reads, and both lock files. The file the link points to is never
// touched. (A commit replaces the cursor by renaming a new file over the
// link, which does not follow it either.)
func TestInboxFilesAreNeverOpenedThroughALink(t *testing.T) {
	for _, which := range []string{"records", "cursor", "io-lock", "listener lock"} {
		t.Run(which, func(t *testing.T) {
			b := newInbox(t)
			appendLines(t, b, "line")
			target := filepath.Join(t.TempDir(), "elsewhere")
			if err := os.WriteFile(target, []byte("precious\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			path := map[string]string{"records": b.path, "cursor": b.cursor, "io-lock": b.ioLock, "listener lock": b.lock}[which]
			_ = os.Remove(path)
			if err := os.Symlink(target, path); err != nil {
				t.Fatal(err)
			}
			var errs []error
			if which == "listener lock" {
				_, ok, err := b.Listen()
				if ok {
					t.Error("Listen took a lock through a link")
				}
				errs = append(errs, err)
			} else {
				_, err := b.Read()
				errs = append(errs, err)
				if which != "cursor" {
					errs = append(errs, b.Append([]byte("x")), b.Commit(5))
				}
				if which == "records" {
					errs = append(errs, b.Create())
				}
			}
			for i, err := range errs {
				if !errors.Is(err, ErrSymlink) {
					t.Errorf("call %d through a linked %s: %v, want ErrSymlink", i, which, err)
				}
			}
			if which == "cursor" {
				if err := b.Commit(5); err != nil {
					t.Fatal(err)
				}
				if isLink(path) {
					t.Error("the cursor is still a link after a commit")
				}
			}
			if data, err := os.ReadFile(target); err != nil || string(data) != "precious\n" {
				t.Errorf("the link's target changed: %q, %v", data, err)
			}
		})
	}
}
