package seal

import (
	"bytes"
	"crypto/ecdh"
	"encoding/hex"
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rogpeppe/go-internal/txtar"

	"github.com/interlink-go/interlink/internal/identity"
)

var update = flag.Bool("update", false, "rewrite the computed parts of testdata/vectors.txtar")

const vectorsFile = "testdata/vectors.txtar"

// hexLines writes b as hex, 32 bytes a line.
func hexLines(b []byte) []byte {
	var out []byte
	for len(b) > 0 {
		n := min(32, len(b))
		out = append(out, hex.EncodeToString(b[:n])...)
		out = append(out, '\n')
		b = b[n:]
	}
	return out
}

// TestVectors checks the fixed vectors byte for byte: the key conversion
// of both seeds, a sealed box made with fixed ephemeral randomness, and a
// sealed message (envelope JSON and its signature) made likewise; each
// also opens to its input. The inputs are the seeds, the ephemeral bytes,
// the box plaintext and the signed inner message (the message signing
// vector A with a reply route); everything else is computed, and -update
// rewrites it.
func TestVectors(t *testing.T) {
	ar, err := txtar.ParseFile(vectorsFile)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	for _, f := range ar.Files {
		files[f.Name] = f.Data
	}
	input := func(name string) []byte {
		d, ok := files[name]
		if !ok {
			t.Fatalf("%s: no file %s", vectorsFile, name)
		}
		return d
	}
	got := map[string][]byte{}

	parties := map[string]party{}
	for _, who := range []string{"alice", "bob"} {
		seed, err := identity.DecodeBase64(strings.TrimSpace(string(input(who + ".seed"))))
		if err != nil {
			t.Fatal(err)
		}
		p := newParty(t, seed)
		parties[who] = p
		scalar, err := PrivateKeyX25519(seed)
		if err != nil {
			t.Fatal(err)
		}
		pub, err := PublicKeyX25519(p.pub())
		if err != nil {
			t.Fatal(err)
		}
		priv, _ := ecdh.X25519().NewPrivateKey(scalar)
		if !bytes.Equal(priv.PublicKey().Bytes(), pub) {
			t.Fatalf("%s: X25519(scalar, 9) = %x, converted key %x", who, priv.PublicKey().Bytes(), pub)
		}
		edPub := p.pub()
		got[who+".ed25519.pub"] = hexLines(edPub[:])
		got[who+".x25519.scalar"] = hexLines(scalar)
		got[who+".x25519.pub"] = hexLines(pub)
	}
	a, b := parties["alice"], parties["bob"]

	plain := input("box.plaintext")
	box, err := Seal(b.pub(), plain, bytes.NewReader(mustHex(t, string(input("box.eph")))))
	if err != nil {
		t.Fatal(err)
	}
	if opened, err := Open(b.seed, box); err != nil || !bytes.Equal(opened, plain) {
		t.Fatalf("the vector box does not open: %q, %v", opened, err)
	}
	got["box.sealed"] = hexLines(box)

	msg, err := identity.DecodeMessage(input("message.json"))
	if err != nil {
		t.Fatal(err)
	}
	env, err := SealMessage(a.signer, &msg, bytes.NewReader(mustHex(t, string(input("message.eph")))))
	if err != nil {
		t.Fatal(err)
	}
	envJSON := mustJSON(t, env)
	opened, err := OpenMessage(b.rcpt, envJSON)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(msg, opened); diff != "" {
		t.Fatalf("the vector envelope opens to another message (-want +got):\n%s", diff)
	}
	got["envelope.json"] = append(envJSON, '\n')
	got["envelope.signed"] = hexLines(env.SignedBytes())
	got["envelope.sig"] = []byte(identity.EncodeBase64(env.Sig[:]) + "\n")

	if *update {
		for i, f := range ar.Files {
			if d, ok := got[f.Name]; ok {
				ar.Files[i].Data = d
				delete(got, f.Name)
			}
		}
		for _, name := range []string{
			"alice.ed25519.pub", "alice.x25519.scalar", "alice.x25519.pub",
			"bob.ed25519.pub", "bob.x25519.scalar", "bob.x25519.pub",
			"box.sealed", "envelope.json", "envelope.signed", "envelope.sig",
		} {
			if d, ok := got[name]; ok {
				ar.Files = append(ar.Files, txtar.File{Name: name, Data: d})
			}
		}
		if err := os.WriteFile(vectorsFile, txtar.Format(ar), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	for name, want := range got {
		if !bytes.Equal(input(name), want) {
			t.Errorf("%s differs:\n got: %s\nwant: %s", name, want, input(name))
		}
	}
}
