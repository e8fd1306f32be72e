package wire

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Limits of the wire contract.
const (
	// MaxBodyBytes is the largest request body a bus takes on every POST
	// route except /announce; one byte more gets 413. A bus whose store
	// takes less says so in [MaxBodyHeader].
	MaxBodyBytes = 2 << 20
	// MaxAnnounceBytes is the largest /announce body a bus takes; one
	// byte more gets 413. Real announcements are well under 1 KiB.
	MaxAnnounceBytes = 4 << 10
	// MaxRouteBytes is the longest route taken in "to" and "me"
	// ([CheckRoute]).
	MaxRouteBytes = 256
	// MaxDepth is how deeply arrays and objects may nest in a request
	// body. The original's parser stops at 128 levels and clients parse
	// answers that wrap a payload in two more, so a deeper payload could
	// be stored but never read.
	MaxDepth = 100
	// DefaultRecvWait is how long /recv waits when its query has no
	// timeout_ms.
	DefaultRecvWait = 25 * time.Second
)

// Headers of the bus's answers that the original's do not have; its
// clients ignore them.
const (
	// MaxBodyHeader carries, in every answer of interlink-bus, the
	// largest /send body it takes now, in decimal ([ParseMaxBody]).
	MaxBodyHeader = "Interlink-Max-Body"
	// VersionHeader carries the bus's version in /healthz answers, when
	// it has one to give. The body stays {"status":"ok"}.
	VersionHeader = "Interlink-Version"
)

// Errors of the request decoders, one per kind of fault; their texts start
// the error bodies the bus answers with.
var (
	// ErrSyntax marks a body that is not one strict JSON value ([CheckJSON]).
	ErrSyntax = errors.New("malformed JSON")
	// ErrShape marks valid JSON of the wrong shape for /send or /ack.
	ErrShape = errors.New("unexpected JSON shape")
	// ErrQuery marks a /recv query that cannot be read.
	ErrQuery = errors.New("bad query")
	// ErrRoute marks a route that breaks [CheckRoute].
	ErrRoute = errors.New("invalid route")
	// ErrAnnounce marks an /announce or /unregister body that is not an
	// object with a string pubkey.
	ErrAnnounce = errors.New("announcement must be a JSON object with a string pubkey")
)

// ParseMaxBody reads a bus's limit on /send bodies from the headers of one
// of its answers: a positive decimal number of at most 19 digits, nothing
// else. ok is false when h gives none, as the original's answers never do.
func ParseMaxBody(h http.Header) (limit int64, ok bool) {
	v := h.Get(MaxBodyHeader)
	if v == "" || len(v) > 19 || strings.Trim(v, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 {
		return 0, false
	}
	return n, true
}
