package identity

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

// EncodeKeyFile returns the content of a secret key file for seed: its base64
// text followed by a newline, 44 bytes in all.
func EncodeKeyFile(seed []byte) []byte {
	return []byte(EncodeBase64(seed) + "\n")
}

// ParseKeyFile parses the content of a secret key file: surrounding
// whitespace is trimmed, the rest must be the strict base64 text of exactly
// 32 bytes.
func ParseKeyFile(data []byte) (*Signer, error) {
	seed, err := DecodeBase64(strings.TrimSpace(string(data)))
	if err != nil {
		return nil, fmt.Errorf("%w in the key file", err)
	}
	if len(seed) != SeedSize {
		return nil, fmt.Errorf("%w: the key file holds %d bytes, want %d", ErrKeyLength, len(seed), SeedSize)
	}
	return NewSigner(seed)
}

// maxKeyFile bounds how much of a key file is read: a real one is 44 bytes,
// and a path pointing at something huge must not exhaust memory.
const maxKeyFile = 4096

// LoadKeyFile reads and parses the secret key file at path.
func LoadKeyFile(path string) (*Signer, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("identity: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxKeyFile+1))
	if err != nil {
		return nil, fmt.Errorf("identity: %w", err) // an *fs.PathError, naming the path
	}
	if len(data) > maxKeyFile {
		return nil, fmt.Errorf("identity: %s is larger than %d bytes", path, maxKeyFile)
	}
	s, err := ParseKeyFile(data)
	if err != nil {
		return nil, fmt.Errorf("%w (%s)", err, path)
	}
	return s, nil
}

// KeyFileExposed reports whether the key file at path grants any permission
// to its group or to others, and returns its permission bits. A secret key
// should be readable by its owner alone: anyone who can read it can sign as
// this identity. Windows keeps permissions in access lists that the mode
// bits do not show, so there it always reports false.
func KeyFileExposed(path string) (perm fs.FileMode, exposed bool, err error) {
	fi, err := os.Stat(path)
	if err != nil {
		return 0, false, fmt.Errorf("identity: %w", err)
	}
	perm = fi.Mode().Perm()
	return perm, runtime.GOOS != "windows" && perm&0o077 != 0, nil
}

// ErrKeyExists reports that the key file is already there and was left
// alone.
var ErrKeyExists = errors.New("identity: key file already exists")

// WriteKeyFile stores the secret key file of seed ([EncodeKeyFile]) at path
// with mode 0600, first creating missing parent folders with mode 0700.
// Without replace an existing file, or a link, is an error wrapping
// [ErrKeyExists] and is not touched; with replace it is swapped for the new
// content in one rename. The secret is never readable by others, not even
// for a moment, and a crash leaves either the old key or the whole new one.
func WriteKeyFile(path string, seed []byte, replace bool) error {
	data := EncodeKeyFile(seed)
	defer clear(data)
	return writeKeyFile(path, data, replace)
}

// writeKeyFile stores data at path as [WriteKeyFile] describes.
func writeKeyFile(path string, data []byte, replace bool) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	if replace {
		return replaceKeyFile(path, data)
	}
	return createKeyFile(path, data)
}

// createKeyFile writes data to a file at path that must not exist yet.
//
// O_EXCL makes the existence check and the creation a single step, so a file
// appearing in between is never overwritten, and the mode is set by that same
// open, so the secret is never readable by others, not even for a moment. A
// symlink at path counts as existing and is not followed.
func createKeyFile(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%w: %s", ErrKeyExists, path)
	}
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		// The umask can only have cleared bits; state the mode outright.
		err = os.Chmod(path, 0o600)
	}
	if err != nil {
		// The file is ours and incomplete: a partial key must not stay.
		os.Remove(path)
		return err
	}
	return nil
}

// replaceKeyFile puts data at path whether or not a file is there.
//
// The data goes to a temporary file in the same folder, created with mode
// 0600 and O_EXCL by [os.CreateTemp], is synced to disk, and is then renamed
// over path. A crash at any point leaves either the old key or the complete
// new one at path, never a partial file. The rename brings the temporary
// file's mode along, so a looser mode on the old file does not survive; the
// explicit chmod afterwards states it all the same.
func replaceKeyFile(path string, data []byte) (err error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			os.Remove(tmp.Name())
		}
	}()
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	return os.Chmod(path, 0o600)
}
