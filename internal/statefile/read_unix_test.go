//go:build unix

package statefile

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// Read refuses what is not a regular file, and a file larger than
// MaxFileSize, without reading from it or waiting on it: a FIFO with no
// writer, a device that never ends, a folder, and a sparse file past the
// limit.
func TestReadRefusesWhatIsNotASmallRegularFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.json")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("no FIFO here: %v", err)
	}
	huge := filepath.Join(dir, "huge.json")
	f, err := os.Create(huge)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(MaxFileSize + 1); err != nil {
		t.Fatal(err)
	}
	f.Close()
	for _, c := range []struct {
		name, path string
		want       error
	}{
		{"fifo", fifo, ErrNotRegular},
		{"device", "/dev/zero", ErrNotRegular},
		{"folder", dir, ErrNotRegular},
		{"huge", huge, ErrTooLarge},
	} {
		t.Run(c.name, func(t *testing.T) {
			data, exists, err := Read(c.path)
			if !errors.Is(err, c.want) || exists || data != nil {
				t.Errorf("Read(%s) = %d bytes, %v, %v; want %v", c.path, len(data), exists, err, c.want)
			}
		})
	}
}
