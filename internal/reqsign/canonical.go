package reqsign

import (
	"encoding/binary"
	"math"
	"strings"

	"github.com/interlink-go/interlink/internal/identity"
)

// Domain is the signing domain of requests, the first bytes of every
// [Canonical] encoding. It differs from the domains of messages and
// announcements, so no signature made for one verifies for another.
const Domain = "interlink-request-v1\x00"

// NonceSize is the length of a request nonce in bytes.
const NonceSize = 16

// Header names. Every signed request carries all four exactly once.
const (
	// HeaderKey carries the signer's public key (43 base64 characters).
	HeaderKey = "Interlink-Key"
	// HeaderTime carries the signing time in Unix milliseconds, decimal.
	HeaderTime = "Interlink-Time"
	// HeaderNonce carries 16 random bytes (22 base64 characters).
	HeaderNonce = "Interlink-Nonce"
	// HeaderSignature carries the Ed25519 signature of the [Canonical]
	// bytes (86 base64 characters).
	HeaderSignature = "Interlink-Signature"
)

// headers lists the header names in the order they are checked.
var headers = [...]string{HeaderKey, HeaderTime, HeaderNonce, HeaderSignature}

// fixedLen is the length of the fixed-size part of the encoding.
const fixedLen = len(Domain) + identity.KeySize + 8 + NonceSize + 32

// Canonical is what a request signature covers.
type Canonical struct {
	Key       identity.PublicKey
	TimeMS    uint64
	Nonce     [NonceSize]byte
	BodyHash  [32]byte // SHA-256 of the body; of no bytes when it has none
	Method    string
	Authority string // lower case, see [Authority]
	Target    string // path and raw query, see [Target]
}

// Bytes returns the encoding of c that is signed: the fixed-size fields
// (domain, key, time, nonce, body hash), then the method, authority and
// target, each with its length in front.
func (c *Canonical) Bytes() []byte {
	b := make([]byte, 0, fixedLen+12+len(c.Method)+len(c.Authority)+len(c.Target))
	b = append(b, Domain...)
	b = append(b, c.Key[:]...)
	b = binary.LittleEndian.AppendUint64(b, c.TimeMS)
	b = append(b, c.Nonce[:]...)
	b = append(b, c.BodyHash[:]...)
	b = appendLP(b, c.Method)
	b = appendLP(b, c.Authority)
	return appendLP(b, c.Target)
}

func appendLP(b []byte, s string) []byte {
	if uint64(len(s)) > math.MaxUint32 {
		// Unreachable: header and request-line bounds keep these short.
		panic("reqsign: field longer than 4 GiB")
	}
	b = binary.LittleEndian.AppendUint32(b, uint32(len(s)))
	return append(b, s...)
}

// Authority returns the form of a host (and port) that is signed: ASCII
// lower case (ASCII letters only), without an IPv6 zone, which the HTTP client drops from the
// Host header it sends. Host names are case-insensitive, so a client and a
// bus that spell the same name differently still agree.
func Authority(host string) string {
	if strings.HasPrefix(host, "[") {
		if i := strings.LastIndex(host, "]"); i > 0 {
			if z := strings.Index(host[:i], "%"); z > 0 {
				host = host[:z] + host[i:]
			}
		}
	}
	return asciiLower(host)
}

func asciiLower(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; 'A' <= c && c <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if 'A' <= b[j] && b[j] <= 'Z' {
					b[j] += 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}
