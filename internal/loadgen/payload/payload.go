package payload

import (
	"bytes"
	"errors"
	"strconv"
	"time"
)

// Make returns the JSON text of a payload for id, sent at sent, with
// size bytes of string content.
func Make(id string, sent time.Duration, size int) []byte {
	b := make([]byte, 0, max(size, len(id)+24)+2)
	b = append(b, '"')
	b = append(b, id...)
	b = append(b, '.')
	b = strconv.AppendInt(b, int64(sent), 10)
	b = append(b, '.')
	for len(b)-1 < size {
		b = append(b, 'x')
	}
	return append(b, '"')
}

// ErrForeign reports a payload [Make] did not make.
var ErrForeign = errors.New("payload not made by this load generator")

// Parse returns the id and send time in a payload made by [Make].
func Parse(p []byte) (id string, sent time.Duration, err error) {
	if len(p) < 2 || p[0] != '"' || p[len(p)-1] != '"' {
		return "", 0, ErrForeign
	}
	s := p[1 : len(p)-1]
	i := bytes.IndexByte(s, '.')
	if i < 0 {
		return "", 0, ErrForeign
	}
	rest := s[i+1:]
	j := bytes.IndexByte(rest, '.')
	if j < 0 {
		return "", 0, ErrForeign
	}
	ns, err := strconv.ParseInt(string(rest[:j]), 10, 64)
	if err != nil {
		return "", 0, ErrForeign
	}
	return string(s[:i]), time.Duration(ns), nil
}
