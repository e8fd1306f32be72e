// Package variant sets up the variants of the roundtrip scenario that the
// load generator measures beside the plain one, each on a bus of its own in
// the same process and the same run:
//
//   - tls: the bus serves HTTPS with a certificate made for the run
//     ([SelfSigned]), and the load's client trusts that certificate only;
//   - signed: the bus runs with [bus.AuthRequired], and every request is
//     signed (package reqsign) as an agent signs it: a send by the
//     sender's key, a poll and an acknowledgement by the key of the route
//     they name, which is the receiver's. Such a bus holds a send's signer
//     to the sender (from) of the message it carries, so each payload is
//     an agent's plaintext message, signed by the sender's key, and is
//     decoded and verified on receipt as the trust gate does;
//   - sealed: every payload is a message signed by the sender's key and
//     sealed to the receiver's (package seal, as an agent seals to a peer
//     that announces it), and is opened on receipt, both signatures
//     verified, before its content is checked.
//
// Each sender has a key of its own and a receiver's key of its own, so
// that no two senders share a key's nonce memory or limits. The bus of a
// signed variant remembers up to 2^23 nonces and has per-key limits far
// above the load, so that its figures are those of signing and
// verifying, not of waiting for tokens or of a full nonce memory; its
// other rules are those of interlink-bus --auth required.
package variant

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/interlink-go/interlink/internal/bus"
	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/keylimit"
	"github.com/interlink-go/interlink/internal/loadgen/busclient"
	"github.com/interlink-go/interlink/internal/loadgen/target"
	"github.com/interlink-go/interlink/internal/reqsign"
	"github.com/interlink-go/interlink/internal/route"
	"github.com/interlink-go/interlink/internal/seal"
)

// Variant is one way of running the roundtrip scenario; the zero value is
// the plain one.
type Variant struct{ TLS, Signed, Sealed bool }

// List returns the variants asked for: each of tls, signed and sealed
// alone, and, when more than one is asked for, all of them together.
func List(tls, signed, sealed bool) []Variant {
	var out []Variant
	n := 0
	for _, v := range []Variant{{TLS: tls}, {Signed: signed}, {Sealed: sealed}} {
		if v != (Variant{}) {
			out = append(out, v)
			n++
		}
	}
	if n > 1 {
		out = append(out, Variant{TLS: tls, Signed: signed, Sealed: sealed})
	}
	return out
}

// Name names the variant in a report: its parts joined by "+", such as
// "signed+sealed"; "roundtrip" for the plain one.
func (v Variant) Name() string {
	var parts []string
	for _, p := range []struct {
		on   bool
		name string
	}{{v.TLS, "tls"}, {v.Signed, "signed"}, {v.Sealed, "sealed"}} {
		if p.on {
			parts = append(parts, p.name)
		}
	}
	if len(parts) == 0 {
		return "roundtrip"
	}
	return strings.Join(parts, "+")
}

// Desc says what the variant's bus and load are, for a report's header.
func (v Variant) Desc() string {
	var parts []string
	if v.TLS {
		parts = append(parts, "HTTPS with a certificate made for the run")
	}
	if v.Signed {
		parts = append(parts, "--auth required, every request signed")
	}
	if v.Sealed {
		parts = append(parts, "payloads signed, sealed and opened")
	}
	return v.Name() + ": " + strings.Join(parts, ", ")
}

// fast is a rate far above what the load can reach.
var fast = keylimit.Rate{Every: time.Nanosecond, Burst: 1 << 30}

// Bus completes opts, the options of the plain bus, for the variant's bus
// and returns them with the TLS configuration its clients need (nil
// without TLS).
func (v Variant) Bus(opts target.Options) (target.Options, *TLSPair, error) {
	if v.Signed {
		ver, err := reqsign.New(&reqsign.Options{PerKey: 1 << 22, Total: 1 << 23})
		if err != nil {
			return opts, nil, err
		}
		opts.Auth, opts.Verifier = bus.AuthRequired, ver
		opts.Limits = &bus.Limits{Sends: fast, RosterUpdates: fast, Unsigned: fast}
	}
	if !v.TLS {
		return opts, nil, nil
	}
	pair, err := SelfSigned()
	if err != nil {
		return opts, nil, err
	}
	opts.TLS = pair.Server
	return opts, pair, nil
}

// Lane is what one sender uses for its cycles: a client to send with and
// one to poll and acknowledge with, and, in a signed or sealed variant,
// the sender's and the receiver's keys. The zero keys of a plain lane
// leave routes and payloads as they are.
type Lane struct {
	Send, Recv *busclient.Client

	from, to *identity.Signer // nil in a plain lane
	rcpt     *seal.Recipient  // the receiver's, when sealed
	signed   bool             // requests signed, so payloads are messages
}

// Plain returns n lanes that send, poll and acknowledge through c.
func Plain(c *busclient.Client, n int) []Lane {
	lanes := make([]Lane, n)
	for i := range lanes {
		lanes[i] = Lane{Send: c, Recv: c}
	}
	return lanes
}

// Lanes returns n lanes of the variant through c, each with a sender's
// and a receiver's key of its own.
func (v Variant) Lanes(c *busclient.Client, n int) ([]Lane, error) {
	lanes := make([]Lane, n)
	for i := range lanes {
		l := &lanes[i]
		l.Send, l.Recv = c, c
		if !v.Signed && !v.Sealed {
			continue
		}
		var err error
		if l.from, err = newSigner(); err != nil {
			return nil, err
		}
		if l.to, err = newSigner(); err != nil {
			return nil, err
		}
		if v.Signed {
			l.Send, l.Recv, l.signed = c.As(l.from), c.As(l.to), true
		}
		if v.Sealed {
			seed := l.to.Seed()
			l.rcpt, err = seal.NewRecipient(seed)
			clear(seed)
			if err != nil {
				return nil, err
			}
		}
	}
	return lanes, nil
}

func newSigner() (*identity.Signer, error) {
	seed := make([]byte, 32)
	if _, err := rand.Read(seed); err != nil {
		return nil, err
	}
	defer clear(seed)
	return identity.NewSigner(seed)
}

// Route returns the route a cycle named name uses: a session of the
// receiver's key, whose own key alone may poll it on a bus that requires
// signatures, or name itself in a plain lane.
func (l *Lane) Route(name string) string {
	if l.to == nil {
		return name
	}
	return route.New(l.to.Public().String(), name).String()
}

// Seal returns what a cycle sends for payload: in a sealed lane, the
// envelope of a message from the sender to the receiver whose text is
// payload, signed and sealed as an agent seals it; in a signed lane, that
// message in plaintext; otherwise payload.
func (l *Lane) Seal(payload []byte) ([]byte, error) {
	if l.rcpt == nil && !l.signed {
		return payload, nil
	}
	var id [16]byte
	rand.Read(id[:])
	m := identity.Message{From: l.from.Public().String(), To: l.to.Public().String(), Text: string(payload),
		TS: uint64(time.Now().UnixMilli()), MsgID: hex.EncodeToString(id[:]), Kind: identity.KindMessage}
	if err := l.from.SignMessage(&m); err != nil {
		return nil, fmt.Errorf("signing the message: %v", err)
	}
	if l.rcpt == nil {
		return m.MarshalJSON()
	}
	e, err := seal.SealMessage(l.from, &m, nil)
	if err != nil {
		return nil, fmt.Errorf("sealing: %v", err)
	}
	return e.MarshalJSON()
}

// Open returns the payload a received body carries: in a sealed lane, the
// text of the message it opens to, both signatures verified; in a signed
// lane, the text of the message it is, its signature verified; otherwise
// body.
func (l *Lane) Open(body []byte) ([]byte, error) {
	if l.rcpt == nil && !l.signed {
		return body, nil
	}
	if l.rcpt == nil {
		m, err := identity.DecodeMessage(body)
		if err == nil {
			_, err = m.Verify()
		}
		if err != nil {
			return nil, fmt.Errorf("verifying: %v", err)
		}
		return []byte(m.Text), nil
	}
	m, err := seal.OpenMessage(l.rcpt, body)
	if err != nil {
		return nil, fmt.Errorf("opening: %v", err)
	}
	return []byte(m.Text), nil
}
