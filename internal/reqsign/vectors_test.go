package reqsign

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/interlink-go/interlink/internal/identity"
	"github.com/rogpeppe/go-internal/txtar"
)

var update = flag.Bool("update", false, "rewrite testdata/vectors.txtar from the encoder")

// vectorInput is one request of the golden vectors.
type vectorInput struct {
	name   string
	seed   string // hex
	timeMS uint64
	nonce  string // hex
	method string
	url    string
	host   string // Host header when it differs from the URL's
	body   string
}

// vectorInputs are public test material: the seeds are the zero seed and
// RFC 8032's first test seed, which identity's message vectors use too.
var vectorInputs = []vectorInput{
	{name: "send", seed: strings.Repeat("00", 32), timeMS: 1700000000000,
		nonce: "000102030405060708090a0b0c0d0e0f", method: "POST",
		url:  "http://Relay.Example:9440/send",
		body: `{"to":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo#s1","payload":{}}`},
	{name: "recv", seed: "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60",
		timeMS: 1700000000123, nonce: "ffeeddccbbaa99887766554433221100", method: "GET",
		url: "https://relay.example/recv?me=11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo%23s1&timeout_ms=25000"},
	{name: "proxy-host", seed: strings.Repeat("00", 32), timeMS: 1700000000000,
		nonce: "0f0e0d0c0b0a09080706050403020100", method: "POST",
		url: "http://127.0.0.1:9440/ack", host: "bus.example.org",
		body: `{"me":"O2onvM62pC1io6jQKm8Nc2UyFXcd4kOmOsBIoYtZ2ik#s1","ack":"x"}`},
}

func mustHex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// signVector signs in and returns the request, its canonical bytes and
// the signature header.
func signVector(t testing.TB, in vectorInput) (*http.Request, []byte, string) {
	t.Helper()
	s, err := identity.NewSigner(mustHex(t, in.seed))
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(in.method, in.url, strings.NewReader(in.body))
	if err != nil {
		t.Fatal(err)
	}
	if in.host != "" {
		req.Host = in.host
	}
	var nonce [NonceSize]byte
	copy(nonce[:], mustHex(t, in.nonce))
	if err := sign(req, sha256.Sum256([]byte(in.body)), s, time.UnixMilli(int64(in.timeMS)), nonce); err != nil {
		t.Fatal(err)
	}
	h, err := ParseHeaders(req.Header)
	if err != nil {
		t.Fatal(err)
	}
	c, err := RequestCanonical(req)
	if err != nil {
		t.Fatal(err)
	}
	c.Key, c.TimeMS, c.Nonce, c.BodyHash = h.Key, h.TimeMS, h.Nonce, sha256.Sum256([]byte(in.body))
	return req, c.Bytes(), req.Header.Get(HeaderSignature)
}

func hexLines(b []byte) string {
	var sb strings.Builder
	for len(b) > 0 {
		n := min(16, len(b))
		sb.WriteString(hex.EncodeToString(b[:n]))
		sb.WriteByte('\n')
		b = b[n:]
	}
	return sb.String()
}

// TestGoldenVectors checks that signing each fixed request (seed, time,
// nonce, method, URL, Host, body) produces the canonical bytes and the
// headers written in testdata/vectors.txtar byte for byte, and that a
// verifier at the same time accepts them. Run with -update to rewrite the
// file after a deliberate change of the encoding.
func TestGoldenVectors(t *testing.T) {
	const path = "testdata/vectors.txtar"
	var ar txtar.Archive
	ar.Comment = []byte("Request signing vectors: for each request, its inputs, the canonical bytes\n" +
		"(hex, 16 bytes a line) and the four headers Sign sets. A body is its file\n" +
		"without the final newline. Regenerate with\n" +
		"go test ./internal/reqsign -run TestGoldenVectors -update\n")
	for _, in := range vectorInputs {
		req, canon, _ := signVector(t, in)
		input := "seed " + in.seed + "\ntime " + strconv.FormatUint(in.timeMS, 10) +
			"\nnonce " + in.nonce + "\nmethod " + in.method + "\nurl " + in.url + "\n"
		if in.host != "" {
			input += "host " + in.host + "\n"
		}
		var hdr strings.Builder
		for _, name := range headers {
			hdr.WriteString(name + ": " + req.Header.Get(name) + "\n")
		}
		ar.Files = append(ar.Files,
			txtar.File{Name: in.name + "/input", Data: []byte(input)},
			txtar.File{Name: in.name + "/body", Data: []byte(in.body + "\n")},
			txtar.File{Name: in.name + "/canonical.hex", Data: []byte(hexLines(canon))},
			txtar.File{Name: in.name + "/headers", Data: []byte(hdr.String())})

		v, err := New(nil)
		if err != nil {
			t.Fatal(err)
		}
		// What a server sees: the Host header and the request line.
		srv := req.Clone(t.Context())
		if srv.Host == "" {
			srv.Host = req.URL.Host
		}
		key, err := v.Verify(srv, []byte(in.body), time.UnixMilli(int64(in.timeMS)))
		if err != nil {
			t.Errorf("%s: verify: %v", in.name, err)
		}
		if want, _ := identity.NewSigner(mustHex(t, in.seed)); key != want.Public() {
			t.Errorf("%s: verified key %v, want %v", in.name, key, want.Public())
		}
	}
	got := txtar.Format(&ar)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("vectors differ from %s; got:\n%s", path, got)
	}
}

// TestVectorLayout checks the first vector's canonical bytes field by
// field against the layout the package documents, independently of the
// encoder: domain, key, time, nonce, body hash, then LP(method),
// LP(authority), LP(target).
func TestVectorLayout(t *testing.T) {
	in := vectorInputs[0]
	_, canon, _ := signVector(t, in)
	alice, _ := identity.NewSigner(mustHex(t, in.seed))
	pub := alice.Public()
	sum := sha256.Sum256([]byte(in.body))
	var want []byte
	want = append(want, "interlink-request-v1\x00"...)
	want = append(want, pub[:]...)
	want = append(want, mustHex(t, "0068e5cf8b010000")...) // 1700000000000
	want = append(want, mustHex(t, in.nonce)...)
	want = append(want, sum[:]...)
	want = append(want, 4, 0, 0, 0)
	want = append(want, "POST"...)
	want = append(want, 18, 0, 0, 0)
	want = append(want, "relay.example:9440"...)
	want = append(want, 5, 0, 0, 0)
	want = append(want, "/send"...)
	if !bytes.Equal(canon, want) {
		t.Errorf("canonical bytes:\n%s\nwant:\n%s", hexLines(canon), hexLines(want))
	}
}
