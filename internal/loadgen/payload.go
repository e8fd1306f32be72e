package loadgen

import (
	"bytes"
	"errors"
	"strconv"
	"time"
)

// A payload is a JSON string whose content starts with the message id and
// its send time, then pads with 'x' to the requested size:
//
//	"s3-1742.1234567890.xxxxxxxx…"
//
// The send time is nanoseconds on the run's monotonic clock (see
// [run.since]), so only the process that sent a payload can turn it into a
// latency. The content is never shorter than id and time need.

// makePayload returns the JSON text of a payload for id, sent at sent, with
// size bytes of string content.
func makePayload(id string, sent time.Duration, size int) []byte {
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

var errBadPayload = errors.New("payload not made by this load generator")

// parsePayload returns the id and send time in a payload made by
// [makePayload].
func parsePayload(p []byte) (id string, sent time.Duration, err error) {
	if len(p) < 2 || p[0] != '"' || p[len(p)-1] != '"' {
		return "", 0, errBadPayload
	}
	s := p[1 : len(p)-1]
	i := bytes.IndexByte(s, '.')
	if i < 0 {
		return "", 0, errBadPayload
	}
	rest := s[i+1:]
	j := bytes.IndexByte(rest, '.')
	if j < 0 {
		return "", 0, errBadPayload
	}
	ns, err := strconv.ParseInt(string(rest[:j]), 10, 64)
	if err != nil {
		return "", 0, errBadPayload
	}
	return string(s[:i]), time.Duration(ns), nil
}
