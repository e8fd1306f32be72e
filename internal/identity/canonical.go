package identity

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// Domain starts the signed bytes of every message. Older "interlink-v1"
// signatures lacked the task fields and are not accepted.
const Domain = "interlink-v2\x00"

// ErrCanonical reports bytes that are not a well-formed canonical encoding.
var ErrCanonical = errors.New("identity: malformed canonical encoding")

// Canonical is the content of a message that its signature covers, in the
// order it is encoded. From and To are the raw key bytes exactly as received:
// a verifier re-encodes nothing. An absent optional field and an empty one
// encode identically (length zero), so a relay that drops an empty task_id
// does not break the signature.
type Canonical struct {
	From, To  [KeySize]byte
	TS        uint64
	Kind      string
	MsgID     string
	Text      string
	Status    string
	TaskID    string
	InReplyTo string
}

// fixedLen is the size of the domain, both keys and the timestamp.
const fixedLen = len(Domain) + 2*KeySize + 8

// Bytes returns the signed encoding:
//
//	"interlink-v2\x00" ‖ from(32) ‖ to(32) ‖ u64le(ts) ‖
//	LP(kind) ‖ LP(msg_id) ‖ LP(text) ‖ LP(status) ‖ LP(task_id) ‖ LP(in_reply_to)
//
// where LP(s) is u32le(len(s)) followed by the bytes of s. The prefixes keep
// ("ab","c") and ("a","bc") apart; status comes before task_id.
func (c *Canonical) Bytes() []byte {
	vars := [...]string{c.Kind, c.MsgID, c.Text, c.Status, c.TaskID, c.InReplyTo}
	n := fixedLen
	for _, v := range vars {
		n += 4 + len(v)
	}
	b := make([]byte, 0, n)
	b = append(b, Domain...)
	b = append(b, c.From[:]...)
	b = append(b, c.To[:]...)
	b = binary.LittleEndian.AppendUint64(b, c.TS)
	for _, v := range vars {
		b = appendLP(b, v)
	}
	return b
}

// ParseCanonical decodes bytes produced by [Canonical.Bytes]. It exists for
// inspection and round-trip tests; verification never parses signed bytes.
// Wrong domain, truncated fields and trailing bytes are errors.
func ParseCanonical(b []byte) (Canonical, error) {
	var c Canonical
	if len(b) < fixedLen || string(b[:len(Domain)]) != Domain {
		return c, fmt.Errorf("%w: bad domain or short header", ErrCanonical)
	}
	r := b[len(Domain):]
	copy(c.From[:], r[:KeySize])
	copy(c.To[:], r[KeySize:2*KeySize])
	c.TS = binary.LittleEndian.Uint64(r[2*KeySize:])
	r = r[2*KeySize+8:]
	for _, dst := range [...]*string{&c.Kind, &c.MsgID, &c.Text, &c.Status, &c.TaskID, &c.InReplyTo} {
		var err error
		if *dst, r, err = readLP(r); err != nil {
			return Canonical{}, err
		}
	}
	if len(r) != 0 {
		return Canonical{}, fmt.Errorf("%w: %d trailing bytes", ErrCanonical, len(r))
	}
	return c, nil
}

func appendLP(b []byte, s string) []byte {
	if uint64(len(s)) > math.MaxUint32 {
		// Unreachable for anything that fits a bus body; refuse rather
		// than write a prefix that lies about the length.
		panic("identity: field longer than 4 GiB")
	}
	b = binary.LittleEndian.AppendUint32(b, uint32(len(s)))
	return append(b, s...)
}

func readLP(b []byte) (string, []byte, error) {
	if len(b) < 4 {
		return "", nil, fmt.Errorf("%w: truncated length prefix", ErrCanonical)
	}
	n := binary.LittleEndian.Uint32(b)
	b = b[4:]
	if uint64(n) > uint64(len(b)) {
		return "", nil, fmt.Errorf("%w: field of %d bytes overruns the input", ErrCanonical, n)
	}
	return string(b[:n]), b[n:], nil
}
