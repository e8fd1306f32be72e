package main

import (
	"bytes"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// testCLI returns a cli writing to buffers, with an empty environment and
// random as its entropy source.
func testCLI(t testing.TB, random io.Reader) (c *cli, stdout, stderr *bytes.Buffer) {
	t.Helper()
	stdout, stderr = new(bytes.Buffer), new(bytes.Buffer)
	c = &cli{
		stdout: stdout,
		stderr: stderr,
		getenv: func(string) string { return "" },
		random: random,
	}
	return c, stdout, stderr
}

type failingReader struct{}

func (failingReader) Read([]byte) (int, error) { return 0, errors.New("entropy source broken") }

func TestKeygenEntropyFailure(t *testing.T) {
	tests := []struct {
		name   string
		random io.Reader
	}{
		{"read error", failingReader{}},
		{"short read", bytes.NewReader(make([]byte, 31))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			parent := filepath.Join(dir, "sub")
			path := filepath.Join(parent, "id.key")
			c, stdout, stderr := testCLI(t, tt.random)

			if code := c.run(t.Context(), []string{"keygen", "--out", path}, nil); code != exitError {
				t.Errorf("exit status %d, want %d", code, exitError)
			}
			if _, err := os.Lstat(parent); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("Lstat(%s) = %v, want not exist: nothing may be left behind", parent, err)
			}
			if stdout.Len() != 0 {
				t.Errorf("stdout = %q, want nothing", stdout)
			}
			msg := stderr.String()
			if !strings.HasPrefix(msg, "interlink-mcp: keygen: ") || strings.Count(msg, "\n") != 1 {
				t.Errorf("stderr = %q, want one line starting with %q", msg, "interlink-mcp: keygen: ")
			}
		})
	}
}

// TestKeygenOutput pins the whole output using the first test vector of
// RFC 8032 §7.1 as the seed.
func TestKeygenOutput(t *testing.T) {
	seed, err := hex.DecodeString("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "id.key")
	c, stdout, stderr := testCLI(t, bytes.NewReader(seed))

	if code := c.run(t.Context(), []string{"keygen", "--out", path}, nil); code != exitOK {
		t.Fatalf("exit status %d, want 0; stderr: %s", code, stderr)
	}
	want := "secret key : " + path + "\n" +
		"public key : 11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo\n" +
		"fingerprint: 11qYAYKx\n" +
		"\n" +
		"Add this to the other side's peers.json, under a name of their choice:\n" +
		`{ "your-petname-for-me": { "key": "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo" } }` + "\n"
	if diff := cmp.Diff(want, stdout.String()); diff != "" {
		t.Errorf("stdout mismatch (-want +got):\n%s", diff)
	}
	if stderr.Len() != 0 {
		t.Errorf("stderr = %q, want nothing", stderr)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff("nWGxne_9WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2A\n", string(got)); diff != "" {
		t.Errorf("key file mismatch (-want +got):\n%s", diff)
	}
}
