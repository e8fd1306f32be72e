package bus

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"time"

	"github.com/interlink-go/interlink/internal/wire"
)

// readBody checks that r carries JSON and reads at most limit bytes of it.
// timeout is the request's deadline, for the error when it passes.
//
// The buffer grows with what arrives and is never sized from the declared
// Content-Length: a client could declare 2 MiB and send nothing, and
// thousands of such clients would otherwise pin a large buffer each. What
// finally cuts off a client that sends slowly or not at all is the
// request's deadline, which the HTTP server sets for every request
// ([NewHTTPServer]); on timeout the connection is closed after the answer,
// since the rest of the body will never be read.
func readBody(w http.ResponseWriter, r *http.Request, limit int64, timeout time.Duration) ([]byte, error) {
	if !wire.IsJSONType(r.Header.Get("Content-Type")) {
		return nil, errMediaType
	}
	if r.ContentLength > limit {
		return nil, fmt.Errorf("%w: more than %d bytes", errTooLarge, limit)
	}
	body, err := readGrowing(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return nil, fmt.Errorf("%w: more than %d bytes", errTooLarge, limit)
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			w.Header().Set("Connection", "close")
			return nil, fmt.Errorf("%w: not complete within %v", errBodyTimeout, timeout)
		}
		return nil, fmt.Errorf("%w: %v", errRead, err)
	}
	return body, nil
}

// firstRead is the size of the buffer a body is first read into. It is
// small because a stalled client holds it for as long as the deadline
// allows; the buffer doubles whenever what arrived fills it.
const firstRead = 64

// readGrowing reads r to the end into a buffer that starts at firstRead
// bytes and doubles as it fills, so its size follows what has arrived.
func readGrowing(r io.Reader) ([]byte, error) {
	buf := make([]byte, 0, firstRead)
	for {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, cap(buf))
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}
