package identity

import (
	"fmt"
	"io"
	"io/fs"
	"os"
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
