package testutil

import (
	"bytes"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/receipt"
)

// LockedBuffer is a bytes.Buffer that many goroutines may write to while a
// test reads it, typically as the destination of a logger or of a child
// process's output. The zero value is ready to use.
type LockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer // guarded by mu
}

// Write appends p to the buffer.
func (b *LockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns everything written so far.
func (b *LockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// maxPoll is the longest pause between two checks of [Eventually].
const maxPoll = 20 * time.Millisecond

// Eventually calls cond until it reports true, and fails tb with what when
// it still does not after timeout. It checks again after 1 ms, then backs
// off to one check every 20 ms, so short waits stay short without
// spinning through long ones.
func Eventually(tb testing.TB, timeout time.Duration, what string, cond func() bool) {
	tb.Helper()
	if !Poll(timeout, cond) {
		tb.Fatalf("timed out after %v waiting for %s", timeout, what)
	}
}

// EventuallyNil calls f until it returns nil, paced as [Eventually], and
// fails tb with what and f's last error when it still does not after
// timeout.
func EventuallyNil(tb testing.TB, timeout time.Duration, what string, f func() error) {
	tb.Helper()
	var err error
	if !Poll(timeout, func() bool { err = f(); return err == nil }) {
		tb.Fatalf("timed out after %v waiting for %s: %v", timeout, what, err)
	}
}

// Poll calls cond until it reports true or timeout passes, paced as
// [Eventually], and reports whether cond held. It fails nothing, so a
// goroutine other than the test's may call it, and a caller for whom the
// timeout is not a failure may too.
func Poll(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	pause := time.Millisecond
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(pause)
		pause = min(2*pause, maxPoll)
	}
	return true
}

// Receipts returns the receipt lines of text, a receive_messages,
// read_message or message_status result, in order, as [receipt.Scan] reads
// them, and fails tb when one does not parse. Encoded as JSON, each is the
// receipt acknowledge_messages takes.
func Receipts(tb testing.TB, text string) []receipt.Line {
	tb.Helper()
	out, err := receipt.Scan(text)
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

// Signer returns the signer whose seed is [identity.SeedSize] copies of b,
// so a test gets the same key for the same b in every run.
func Signer(tb testing.TB, b byte) *identity.Signer {
	tb.Helper()
	return newSigner(tb, bytes.Repeat([]byte{b}, identity.SeedSize))
}

// NumberedSigner returns the signer whose seed holds n+1 in its first four
// bytes, big-endian, and zeros after, so each n gives a distinct key.
func NumberedSigner(tb testing.TB, n int) *identity.Signer {
	tb.Helper()
	seed := make([]byte, identity.SeedSize)
	binary.BigEndian.PutUint32(seed, uint32(n)+1)
	return newSigner(tb, seed)
}

func newSigner(tb testing.TB, seed []byte) *identity.Signer {
	tb.Helper()
	s, err := identity.NewSigner(seed)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// Deps returns the import paths of the packages pkg depends on, pkg
// included, as `go list -deps` reports them for the binaries (test files
// left out). It skips the test when the go command cannot be run.
func Deps(tb testing.TB, pkg string) []string {
	tb.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		tb.Skipf("go command not found: %v", err)
	}
	out, err := exec.Command(gobin, "list", "-deps", pkg).Output()
	if err != nil {
		tb.Fatalf("go list -deps %s: %v", pkg, err)
	}
	return strings.Fields(string(out))
}

// DepModules returns the modules other than the standard library that the
// packages of pkg, as [Deps] lists them, come from: what its binary links.
// It skips the test when the go command cannot be run.
func DepModules(tb testing.TB, pkg string) []string {
	tb.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		tb.Skipf("go command not found: %v", err)
	}
	out, err := exec.Command(gobin, "list", "-deps", "-f", "{{with .Module}}{{.Path}}{{end}}", pkg).Output()
	if err != nil {
		tb.Fatalf("go list -deps %s: %v", pkg, err)
	}
	mods := strings.Fields(string(out))
	slices.Sort(mods)
	return slices.Compact(mods)
}

// BuildBus builds interlink-bus without cgo from this module into a
// temporary folder of tb and returns its path. The go command's cache makes
// every build after the first one cheap.
func BuildBus(tb testing.TB) string {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "interlink-bus")
	cmd := exec.Command("go", "build", "-o", path, "github.com/interlink-go/interlink/cmd/interlink-bus")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("building interlink-bus: %v\n%s", err, out)
	}
	return path
}
