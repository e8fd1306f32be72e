package identity

import (
	"encoding/hex"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"
)

// vector is one golden signing vector from testdata/vectors.
type vector struct {
	name      string
	signer    *Signer
	files     map[string][]byte
	canonical []byte
	sig       string
}

func loadVectors(t testing.TB) []vector {
	t.Helper()
	paths, err := filepath.Glob("../../testdata/vectors/*.txtar")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no vectors: %v", err)
	}
	var out []vector
	for _, p := range paths {
		ar, err := txtar.ParseFile(p)
		if err != nil {
			t.Fatal(err)
		}
		v := vector{name: filepath.Base(p), files: map[string][]byte{}}
		for _, f := range ar.Files {
			v.files[f.Name] = f.Data
		}
		if v.signer, err = ParseKeyFile(v.files["seed"]); err != nil {
			t.Fatalf("%s: seed: %v", p, err)
		}
		hx := strings.Join(strings.Fields(string(v.files["canonical.hex"])), "")
		if v.canonical, err = hex.DecodeString(hx); err != nil {
			t.Fatalf("%s: canonical.hex: %v", p, err)
		}
		v.sig = strings.TrimSpace(string(v.files["sig"]))
		out = append(out, v)
	}
	return out
}

// TestGoldenVectors checks the canonical bytes and signatures of the
// reference vectors byte for byte, in both directions: our encoder produces
// the bytes, our signer the signature, and the given JSON verifies.
func TestGoldenVectors(t *testing.T) {
	for _, v := range loadVectors(t) {
		t.Run(v.name, func(t *testing.T) {
			var got []byte
			var verify func() (PublicKey, error)
			switch {
			case v.files["message.json"] != nil:
				m, err := DecodeMessage(v.files["message.json"])
				if err != nil {
					t.Fatal(err)
				}
				c, err := m.Canonical()
				if err != nil {
					t.Fatal(err)
				}
				got = c.Bytes()
				verify = m.Verify
				// Re-signing the same content reproduces the signature
				// (Ed25519 is deterministic).
				re := m
				re.Sig = ""
				if err := v.signer.SignMessage(&re); err != nil {
					t.Fatal(err)
				}
				if re.Sig != v.sig {
					t.Errorf("re-signed sig = %s, want %s", re.Sig, v.sig)
				}
			case v.files["announcement.json"] != nil:
				a, err := DecodeAnnouncement(v.files["announcement.json"])
				if err != nil {
					t.Fatal(err)
				}
				if got, err = a.SigningBytes(); err != nil {
					t.Fatal(err)
				}
				verify = a.Verify
				re := v.signer.Announce(a.Name, a.Session, a.TS)
				if re.Sig != v.sig {
					t.Errorf("re-signed sig = %s, want %s", re.Sig, v.sig)
				}
			default:
				t.Fatal("vector has neither message.json nor announcement.json")
			}
			if hex.EncodeToString(got) != hex.EncodeToString(v.canonical) {
				t.Errorf("canonical bytes\n got %x\nwant %x", got, v.canonical)
			}
			if s := EncodeBase64(v.signer.Sign(v.canonical)); s != v.sig {
				t.Errorf("sig = %s, want %s", s, v.sig)
			}
			k, err := verify()
			if err != nil {
				t.Fatalf("verify: %v", err)
			}
			if k != v.signer.Public() {
				t.Errorf("verified sender %s, want %s", k, v.signer.Public())
			}
		})
	}
}

func TestGoldenSizes(t *testing.T) {
	want := map[string]int{
		"message-a.txtar": 120, "message-b.txtar": 133,
		"message-c.txtar": 127, "announce-alice.txtar": 92,
	}
	for _, v := range loadVectors(t) {
		if n, ok := want[v.name]; ok && len(v.canonical) != n {
			t.Errorf("%s: %d canonical bytes, want %d", v.name, len(v.canonical), n)
		}
	}
	var c Canonical
	if n := len(c.Bytes()); n != 109 {
		// 85 fixed bytes and six empty length prefixes.
		t.Errorf("empty canonical encoding is %d bytes, want 109", n)
	}
	c.Kind, c.MsgID, c.Text = "message", "", ""
	if n := len(c.Bytes()); n != 116 {
		t.Errorf("message with empty id and text is %d bytes, want 116", n)
	}
}
