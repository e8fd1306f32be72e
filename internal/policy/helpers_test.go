package policy

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/interlink-go/interlink/internal/identity"
)

const (
	// specKey is the example key of the peers.json format description.
	specKey = "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"
	// identityKey is the identity point (0x01 then 31 zero bytes), a key
	// of small order that parses but can never verify.
	identityKey = "AQAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
	// notAPoint is 32 bytes that do not decode to a curve point.
	notAPoint = "AgAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
)

// seedKey returns the public key derived from a seed made of n, so every n
// gives a distinct, valid key.
func seedKey(n int) (identity.PublicKey, error) {
	seed := make([]byte, identity.SeedSize)
	binary.BigEndian.PutUint64(seed, uint64(n))
	copy(seed[8:], "policy test key")
	s, err := identity.NewSigner(seed)
	if err != nil {
		return identity.PublicKey{}, err
	}
	return s.Public(), nil
}

// testKey is seedKey for tests.
func testKey(tb testing.TB, n int) identity.PublicKey {
	tb.Helper()
	k, err := seedKey(n)
	if err != nil {
		tb.Fatal(err)
	}
	return k
}

func mustParseKey(tb testing.TB, s string) identity.PublicKey {
	tb.Helper()
	k, err := identity.ParsePublicKey(s)
	if err != nil {
		tb.Fatal(err)
	}
	return k
}

// policyJSON returns a peers.json listing the given entries in order.
func policyJSON(es ...Entry) string {
	parts := make([]string, len(es))
	for i, e := range es {
		name, err := json.Marshal(e.Name)
		if err != nil {
			panic(err) // a string always encodes
		}
		parts[i] = fmt.Sprintf(`%s: {"key": "%s"}`, name, e.Key)
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// writePeers writes content to a new peers.json in a temp dir and returns
// its path.
func writePeers(tb testing.TB, content string) string {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "peers.json")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		tb.Fatal(err)
	}
	return path
}

// newStore opens a store on a new peers.json holding content. On cleanup it
// checks that the file still parses.
func newStore(tb testing.TB, content string) *Store {
	tb.Helper()
	s, err := Open(writePeers(tb, content))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if _, err := s.Load(); err != nil {
			tb.Errorf("peers.json is broken at the end of the test: %v", err)
		}
	})
	return s
}

func readFile(tb testing.TB, path string) []byte {
	tb.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	return data
}

// checkUnchanged fails if the file at path no longer holds before.
func checkUnchanged(tb testing.TB, path string, before []byte) {
	tb.Helper()
	if after := readFile(tb, path); !bytes.Equal(before, after) {
		tb.Errorf("file changed:\nbefore: %q\nafter:  %q", before, after)
	}
}

func mustLoad(tb testing.TB, s *Store) *Policy {
	tb.Helper()
	p, err := s.Load()
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

func mustPolicy(tb testing.TB, es ...Entry) *Policy {
	tb.Helper()
	p, err := Parse([]byte(policyJSON(es...)))
	if err != nil {
		tb.Fatal(err)
	}
	return p
}
