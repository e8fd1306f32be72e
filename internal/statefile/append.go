package statefile

import "os"

// AppendAt writes buf at offset of the existing file at path, cutting off
// whatever lies beyond (the unfinished line of a writer that crashed, in
// an append-only log), and syncs the file.
func AppendAt(path string, offset int64, buf []byte) (err error) {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}()
	if err := f.Truncate(offset); err != nil {
		return err
	}
	if _, err := f.WriteAt(buf, offset); err != nil {
		return err
	}
	return f.Sync()
}
