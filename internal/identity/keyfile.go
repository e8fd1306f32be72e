package identity

import (
	"fmt"
	"io"
	"os"
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
		return nil, fmt.Errorf("identity: key file: %w", err)
	}
	if len(seed) != SeedSize {
		return nil, fmt.Errorf("identity: key file: %w: %d bytes, want %d", ErrKeyLength, len(seed), SeedSize)
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
		return nil, fmt.Errorf("identity: read %s: %w", path, err)
	}
	if len(data) > maxKeyFile {
		return nil, fmt.Errorf("identity: key file %s is larger than %d bytes", path, maxKeyFile)
	}
	s, err := ParseKeyFile(data)
	if err != nil {
		return nil, fmt.Errorf("%w (%s)", err, path)
	}
	return s, nil
}
