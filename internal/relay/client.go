package relay

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/untrusted"
)

// Per-request timeouts, applied inside each method on top of the caller's
// context.
const (
	sendTimeout       = 30 * time.Second
	ackTimeout        = 10 * time.Second
	announceTimeout   = 10 * time.Second
	unregisterTimeout = 3 * time.Second
	rosterTimeout     = 10 * time.Second
	// recvGrace is added to the long-poll wait, so the relay's timeout
	// reply arrives before the request times out.
	recvGrace = 5 * time.Second
	// maxRecvWait caps the long-poll wait a caller may ask for; the bus
	// caps it lower still.
	maxRecvWait = time.Hour
	// dialTimeout bounds connecting in the default HTTP client.
	dialTimeout = 10 * time.Second
)

// Response body limits. A hostile relay could otherwise stream without end.
const (
	// recvLimit is twice the bus's request body limit, so any payload the
	// bus accepted fits together with its envelope and ack key.
	recvLimit = 4 << 20
	// rosterLimit holds a full roster of the bus's 4096 entries at up to
	// about 2 KiB each; real announcements are well under 1 KiB.
	rosterLimit = 8 << 20
	// smallLimit caps what is drained from replies that should be empty.
	smallLimit = 64 << 10
	// excerptLimit caps the body excerpt kept in a StatusError.
	excerptLimit = 256
)

// Options holds the optional settings of [New]. A nil *Options, and every
// zero field, means the default.
type Options struct {
	// HTTPClient makes the requests. Nil means a client that opens a new
	// connection for every request (so no socket outlives a laptop's
	// sleep), gives up connecting after 10 s, ignores proxy settings from
	// the environment (relays sit on loopback or a private network), and
	// does not follow redirects (a 3xx is a [*StatusError]). Its Timeout
	// should be zero: each method sets its own deadline, and a long-poll
	// runs for as long as the caller asks.
	HTTPClient *http.Client
	// Logger receives debug events about roster entries that were skipped.
	// Nil discards them.
	Logger *slog.Logger
}

// Client talks to one relay. It holds no state beyond its settings and is
// safe for concurrent use.
type Client struct {
	base string
	hc   *http.Client
	log  *slog.Logger
}

// New returns a client for the relay at baseURL, which should come from
// [ParseURLs]; a trailing slash is removed.
func New(baseURL string, opts *Options) *Client {
	if opts == nil {
		opts = &Options{}
	}
	c := &Client{
		base: strings.TrimRight(baseURL, "/"),
		hc:   opts.HTTPClient,
		log:  opts.Logger,
	}
	if c.hc == nil {
		c.hc = defaultHTTPClient()
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	return c
}

func defaultHTTPClient() *http.Client {
	return &http.Client{
		Transport: &http.Transport{
			Proxy:             nil,
			DialContext:       (&net.Dialer{Timeout: dialTimeout}).DialContext,
			DisableKeepAlives: true,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}

// URL returns the relay's base URL.
func (c *Client) URL() string { return c.base }

// Send posts payload, the JSON text of a signed message, to the queue of
// route. Any 2xx reply means the relay accepted it. A non-2xx reply is a
// [*StatusError]; [StatusError.Permanent] tells a refusal from a failure
// worth retrying.
func (c *Client) Send(ctx context.Context, route string, payload []byte) error {
	body, err := identity.Marshal(struct {
		To      string          `json:"to"`
		Payload json.RawMessage `json:"payload"`
	}{route, payload})
	if err != nil {
		return fmt.Errorf("relay: send: encode: %w", err)
	}
	_, err = c.do(ctx, "send", http.MethodPost, "/send", body, sendTimeout, 0)
	return err
}

// Delivery is the reply to a long-poll.
type Delivery struct {
	// HasMessage is false when the wait ended without a message.
	HasMessage bool
	// Ack is the key that acknowledges the message; pass it to
	// [Client.Ack] unchanged. It contains a NUL byte.
	Ack string
	// Payload is the message as the sender posted it, unverified. It is
	// nil when the envelope carries no payload or a null one.
	Payload json.RawMessage
}

// Recv long-polls the queue of route for its oldest unacknowledged message,
// waiting up to wait (at most an hour) for one to arrive. The message stays queued until it is
// acknowledged. A reply whose status is not "message" is an empty
// [Delivery]; a non-2xx reply, including the bus's 500 {"status":"error"},
// is a [*StatusError].
func (c *Client) Recv(ctx context.Context, route string, wait time.Duration) (Delivery, error) {
	wait = min(max(wait, 0), maxRecvWait)
	q := url.Values{
		"me":         {route},
		"timeout_ms": {strconv.FormatInt(wait.Milliseconds(), 10)},
	}
	body, err := c.do(ctx, "recv", http.MethodGet, "/recv?"+q.Encode(), nil, wait+recvGrace, recvLimit)
	if err != nil {
		return Delivery{}, err
	}
	var reply struct {
		Status   string  `json:"status"`
		Ack      *string `json:"ack"`
		Envelope *struct {
			Payload json.RawMessage `json:"payload"`
		} `json:"envelope"`
	}
	if err := json.Unmarshal(body, &reply); err != nil {
		return Delivery{}, fmt.Errorf("%w: recv from %s: %w", ErrMalformed, c.base, err)
	}
	if reply.Status != "message" {
		return Delivery{}, nil
	}
	if reply.Ack == nil {
		return Delivery{}, fmt.Errorf("%w: recv from %s: message without an ack key", ErrMalformed, c.base)
	}
	d := Delivery{HasMessage: true, Ack: *reply.Ack}
	if reply.Envelope != nil && string(reply.Envelope.Payload) != "null" {
		d.Payload = reply.Envelope.Payload
	}
	return d, nil
}

// Ack removes the message with key ack from the queue of route. Acks are
// idempotent: an unknown key of the right route succeeds.
func (c *Client) Ack(ctx context.Context, route, ack string) error {
	// JSON writes the NUL as \u0000, which the bus decodes back to the
	// same bytes, so the key travels unchanged.
	body, err := identity.Marshal(struct {
		Me  string `json:"me"`
		Ack string `json:"ack"`
	}{route, ack})
	if err != nil {
		return fmt.Errorf("relay: ack: encode: %w", err)
	}
	_, err = c.do(ctx, "ack", http.MethodPost, "/ack", body, ackTimeout, 0)
	return err
}

// Announce posts a signed presence announcement.
func (c *Client) Announce(ctx context.Context, a identity.Announcement) error {
	a.AgeMS = nil // the relay stamps its own
	body, err := identity.Marshal(a)
	if err != nil {
		return fmt.Errorf("relay: announce: encode: %w", err)
	}
	_, err = c.do(ctx, "announce", http.MethodPost, "/announce", body, announceTimeout, 0)
	return err
}

// Unregister removes the roster entry of pubkey's session s. The request is
// unsigned, as the bus checks no signature on it.
func (c *Client) Unregister(ctx context.Context, pubkey string, s identity.SessionInfo) error {
	body, err := identity.Marshal(struct {
		PubKey  string               `json:"pubkey"`
		Session identity.SessionInfo `json:"session"`
	}{pubkey, s})
	if err != nil {
		return fmt.Errorf("relay: unregister: encode: %w", err)
	}
	_, err = c.do(ctx, "unregister", http.MethodPost, "/unregister", body, unregisterTimeout, 0)
	return err
}

// Roster returns the relay's roster elements as raw JSON, unverified and
// not even checked to be valid JSON one by one: see [FetchRoster], which
// decodes each element on its own. The error text tells the failures apart:
// "roster request failed" for a transport failure, the numeric status for
// an HTTP error (a [*StatusError]), "invalid roster JSON" for a body whose
// outer structure is not JSON, and "expected a roster array" for JSON of
// another shape.
func (c *Client) Roster(ctx context.Context) ([]json.RawMessage, error) {
	body, err := c.do(ctx, "roster", http.MethodGet, "/roster", nil, rosterTimeout, rosterLimit)
	if err != nil {
		return nil, err
	}
	elems, err := rosterElements(body)
	if err != nil {
		return nil, fmt.Errorf("%w: %v (from %s)", ErrMalformed, err, c.base)
	}
	return elems, nil
}

// do makes one request with its own timeout and returns the body of a 2xx
// reply, read up to limit bytes. With limit 0 the body is drained up to
// smallLimit and discarded, so a caller-supplied client can reuse the
// connection. A non-2xx reply is a *StatusError.
func (c *Client) do(ctx context.Context, op, method, path string, body []byte, timeout time.Duration, limit int64) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return nil, fmt.Errorf("relay: %s request failed: %w", op, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("relay: %s request failed: %w", op, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, excerptLimit))
		return nil, &StatusError{
			URL:  req.URL.String(),
			Op:   op,
			Code: resp.StatusCode,
			Body: untrusted.Clean(string(b)),
		}
	}
	if limit == 0 {
		_, _ = io.CopyN(io.Discard, resp.Body, smallLimit)
		return nil, nil
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, fmt.Errorf("relay: %s: read reply: %w", op, err)
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%w: %s from %s: over %d bytes", ErrTooLarge, op, c.base, limit)
	}
	return b, nil
}
