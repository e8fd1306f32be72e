package identity

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
)

func TestWriteKeyFile(t *testing.T) {
	first := []byte("first\n")
	second := []byte("second\n")

	t.Run("replace leaves only the key file", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, "id.key")
		for _, data := range [][]byte{first, second} {
			if err := writeKeyFile(path, data, true); err != nil {
				t.Fatal(err)
			}
		}
		assertDir(t, dir, "id.key")
		assertContent(t, path, second)
	})

	t.Run("create refuses an existing file", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, "id.key")
		if err := writeKeyFile(path, first, false); err != nil {
			t.Fatal(err)
		}
		if err := writeKeyFile(path, second, false); !errors.Is(err, ErrKeyExists) {
			t.Fatalf("second write: %v, want ErrKeyExists", err)
		}
		assertDir(t, dir, "id.key")
		assertContent(t, path, first)
	})

	t.Run("failed replace leaves no temporary file", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, "id.key")
		// A non-empty folder cannot be renamed over.
		if err := os.MkdirAll(filepath.Join(path, "inside"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := writeKeyFile(path, first, true); err == nil {
			t.Fatal("replacing a folder succeeded")
		}
		assertDir(t, dir, "id.key")
	})
}

func assertDir(t testing.TB, dir string, want ...string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	if !slices.Equal(want, got) {
		t.Errorf("entries of %s = %q, want %q", dir, got, want)
	}
}

func assertContent(t testing.TB, path string, want []byte) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s holds %q, want %q", path, got, want)
	}
}

// WriteKeyFile writes the key file of the seed, readable by its owner
// alone, in a folder it creates for the owner alone.
func TestWriteKeyFileWritesTheSeedForItsOwnerOnly(t *testing.T) {
	seed := bytes.Repeat([]byte{3}, SeedSize)
	path := filepath.Join(t.TempDir(), "new", "id.key")
	if err := WriteKeyFile(path, seed, false); err != nil {
		t.Fatal(err)
	}
	s, err := LoadKeyFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := NewSigner(seed)
	if s.Public() != want.Public() {
		t.Errorf("the file holds key %s, want %s", s.Public(), want.Public())
	}
	if runtime.GOOS == "windows" {
		return // permissions are access lists there
	}
	for p, mode := range map[string]os.FileMode{path: 0o600, filepath.Dir(path): 0o700} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != mode {
			t.Errorf("%s: mode %v, want %v", p, fi.Mode().Perm(), mode)
		}
	}
}
