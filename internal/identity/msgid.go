package identity

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"time"
)

// MaxReceivedMsgID is the longest msg_id, in bytes, of a message a session
// takes in. The ids [NewMsgID] makes are 32 characters; a longer one only
// costs the receiver: the id is kept in memory against replays, written to
// the mailbox and its tombstones, logged and shown in every receipt.
const MaxReceivedMsgID = 256

// NewMsgID returns a fresh message id: 16 random bytes as 32 lowercase hex
// characters. It reads from r, or from the operating system's generator when r
// is nil, and fails rather than return a predictable id.
func NewMsgID(r io.Reader) (string, error) {
	if r == nil {
		r = rand.Reader
	}
	var b [16]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return "", fmt.Errorf("identity: message id: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// Millis returns t as Unix milliseconds, the time unit of the wire format.
// Times before 1970 give 0.
func Millis(t time.Time) uint64 {
	ms := t.UnixMilli()
	if ms < 0 {
		return 0
	}
	return uint64(ms)
}
