package reqsign

import (
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/interlink-go/interlink/internal/identity"
)

// Signer is what signs a request: [identity.Signer] is one.
type Signer interface {
	Public() identity.PublicKey
	Sign(msg []byte) []byte
}

// Sign signs req, whose body is body, with s at now, and sets the four
// headers on req. The caller sends body as the request's body unchanged;
// a request without a body passes nil. The authority signed is req.Host,
// or req.URL.Host when that is empty, as the HTTP client sends it.
func Sign(req *http.Request, body []byte, s Signer, now time.Time) error {
	var nonce [NonceSize]byte
	if _, err := io.ReadFull(rand.Reader, nonce[:]); err != nil {
		return fmt.Errorf("reqsign: nonce: %w", err)
	}
	return sign(req, sha256.Sum256(body), s, now, nonce)
}

func sign(req *http.Request, sum [32]byte, s Signer, now time.Time, nonce [NonceSize]byte) error {
	c, err := RequestCanonical(req)
	if err != nil {
		return err
	}
	c.Key = s.Public()
	c.TimeMS = unixMS(now)
	c.Nonce = nonce
	c.BodyHash = sum
	sig := s.Sign(c.Bytes())
	h := Headers{Key: c.Key, TimeMS: c.TimeMS, Nonce: nonce}
	copy(h.Signature[:], sig)
	h.Set(req.Header)
	return nil
}

// RequestCanonical returns the method, authority and target of req as a
// client sends them; the other fields are left zero.
func RequestCanonical(req *http.Request) (Canonical, error) {
	if req.URL == nil {
		return Canonical{}, errors.New("reqsign: request without a URL")
	}
	host := req.Host
	if host == "" {
		host = req.URL.Host
	}
	for i := 0; i < len(host); i++ {
		if host[i] >= 0x80 || host[i] < 0x21 {
			return Canonical{}, fmt.Errorf("reqsign: host %q is not printable ASCII; address the relay by its punycode name", host)
		}
	}
	method := req.Method
	if method == "" {
		method = http.MethodGet
	}
	return Canonical{Method: method, Authority: Authority(host), Target: Target(req)}, nil
}

// Target returns the request target that is signed: the escaped path and
// the raw query, as a client writes it on the request line and a server
// reads it back, also when the request went through a forward proxy in
// absolute form.
func Target(r *http.Request) string { return r.URL.RequestURI() }

// unixMS is t in Unix milliseconds; a time before 1970 is 0.
func unixMS(t time.Time) uint64 {
	ms := t.UnixMilli()
	if ms < 0 {
		return 0
	}
	return uint64(ms)
}

// Headers are the signature headers of a request, decoded.
type Headers struct {
	Key       identity.PublicKey
	TimeMS    uint64
	Nonce     [NonceSize]byte
	Signature [identity.SignatureSize]byte
}

// Set writes h into hdr, replacing any earlier values.
func (h *Headers) Set(hdr http.Header) {
	hdr.Set(HeaderKey, h.Key.String())
	hdr.Set(HeaderTime, strconv.FormatUint(h.TimeMS, 10))
	hdr.Set(HeaderNonce, identity.EncodeBase64(h.Nonce[:]))
	hdr.Set(HeaderSignature, identity.EncodeBase64(h.Signature[:]))
}
