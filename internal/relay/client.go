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
	"net/http/httptrace"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/reqsign"
	"github.com/interlink-go/interlink/internal/tlsfiles"
	"github.com/interlink-go/interlink/internal/untrusted"
	"github.com/interlink-go/interlink/internal/wire"
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

// Connection reuse of the default HTTP clients.
const (
	// IdleTimeout is how long the default clients keep an idle connection
	// for the next request. It is well below the two minutes after which
	// interlink-bus closes an idle connection, so that the client, not
	// the bus, ends idle connections and a request does not meet a
	// connection the bus is closing at that moment.
	IdleTimeout = 90 * time.Second
	// maxIdlePerHost is how many idle connections to one relay each
	// default client keeps: sends, acknowledgements and presence updates
	// rarely overlap, and a session polls one route per relay.
	maxIdlePerHost = 4
)

// repeatable lists the requests that are sent once more, on a new
// connection, when a reused connection turns out to be dead (see
// [Client.do]). Each is safe to repeat:
//
//   - send: the relay may have stored the message before the connection
//     died, so the repeat may store it twice; receivers drop the second
//     copy, since the gate refuses a message whose sender and msg_id it has
//     admitted already.
//   - ack, unregister: removing what is gone already changes nothing.
//   - announce: the relay replaces the entry with the same one.
//   - recv, roster: reads; a message stays queued until acked.
//
// [Client.Health] is not tried again: it reports what one request saw.
var repeatable = map[string]bool{
	"send": true, "ack": true, "announce": true, "unregister": true,
	"recv": true, "roster": true,
}

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
	// HTTPClient makes the requests. Nil means two clients of the
	// Client's own: one for long-polls ([Client.Recv]) and one for
	// everything else, so that a parked poll never holds up a send. Both
	// keep connections open for reuse for up to [IdleTimeout], give up
	// connecting after 10 s, ignore proxy settings from the environment
	// (relays sit on loopback or a private network), and do not follow
	// redirects (a 3xx is a [*StatusError]).
	//
	// A kept connection may be dead by the time it is used again: the
	// relay restarted, or a laptop slept and the network changed. Such a
	// request is sent again once, on a new connection, when it is safe to
	// repeat (all of this package's requests are). And when the wall clock
	// shows that more than IdleTimeout passed since the last request,
	// which is what a sleep looks like, the idle connections are closed
	// before the next request rather than tried.
	//
	// A given client's Timeout should be zero: each method sets its own
	// deadline, and a long-poll runs for as long as the caller asks.
	HTTPClient *http.Client
	// DialContext opens the connections of the default HTTP clients (it is
	// not used with HTTPClient). Nil means a [net.Dialer] that gives up
	// after 10 s. Load tests set it to count connections.
	DialContext func(ctx context.Context, network, addr string) (net.Conn, error)
	// Logger receives debug events about roster entries that were
	// skipped, and the one warning about a relay reached over plain HTTP
	// across a network. Nil discards them.
	Logger *slog.Logger
	// Signer, if set, signs every request to the relay (package reqsign)
	// with the session's key, so that a relay that checks signatures
	// lets it read and acknowledge its own routes and counts its sends
	// against its key. Nil sends unsigned requests, as the original's
	// agents do.
	Signer reqsign.Signer
	// Now is the clock that stamps signatures, notices gaps and ages a
	// revalidated roster ([Client.RosterRevalidated]); nil means
	// time.Now. Tests that move a bus's clock give the client the same.
	Now func() time.Time
}

// Client talks to one relay. It is safe for concurrent use.
type Client struct {
	base string
	hc   *http.Client // short requests
	poll *http.Client // long-polls; the same as hc when the caller gave one
	log  *slog.Logger
	// signer signs every request; nil for unsigned ones. Fixed at
	// creation.
	signer reqsign.Signer

	// own lists the transports the Client made, whose idle connections it
	// closes after a gap; empty when the caller gave the HTTP client.
	own []*http.Transport
	// now is the wall clock, read to notice gaps such as a sleep.
	now func() time.Time
	// last is the wall time in Unix nanoseconds when the last request
	// started.
	last atomic.Int64
	// maxBody is the relay's limit on /send bodies from the last answer
	// that gave one, or 0; see [Client.MaxBody].
	maxBody atomic.Int64
	// kept is the last whole roster the relay served, for revalidation.
	kept keptRoster
}

// New returns a client for the relay at baseURL, which should come from
// [ParseURLs]; a trailing slash is removed.
func New(baseURL string, opts *Options) *Client {
	if opts == nil {
		opts = &Options{}
	}
	c := &Client{
		base:   strings.TrimRight(baseURL, "/"),
		hc:     opts.HTTPClient,
		poll:   opts.HTTPClient,
		log:    opts.Logger,
		now:    opts.Now,
		signer: opts.Signer,
	}
	if c.hc == nil {
		dial := opts.DialContext
		if dial == nil {
			dial = (&net.Dialer{Timeout: dialTimeout}).DialContext
		}
		var short, long *http.Transport
		c.hc, short = defaultHTTPClient(dial)
		c.poll, long = defaultHTTPClient(dial)
		c.own = []*http.Transport{short, long}
	}
	if c.now == nil {
		c.now = time.Now
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	if u, err := url.Parse(c.base); err == nil && u.Scheme == "http" && !loopbackHost(u.Hostname()) {
		c.log.Warn("relay reached over plain HTTP across a network: anyone on the way can read the messages and the roster; use an https:// address",
			"relay", c.base)
	}
	return c
}

// loopbackHost reports whether host names this machine: localhost, or a
// loopback address.
func loopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}

func defaultHTTPClient(dial func(ctx context.Context, network, addr string) (net.Conn, error)) (*http.Client, *http.Transport) {
	tr := &http.Transport{
		Proxy:               nil,
		DialContext:         dial,
		MaxIdleConns:        maxIdlePerHost,
		MaxIdleConnsPerHost: maxIdlePerHost,
		IdleConnTimeout:     IdleTimeout,
		DisableCompression:  true,
	}
	return &http.Client{
		Transport: tr,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}, tr
}

// CloseIdleConnections closes the connections the Client keeps for reuse.
// It does not touch a caller-supplied HTTP client's.
func (c *Client) CloseIdleConnections() {
	for _, tr := range c.own {
		tr.CloseIdleConnections()
	}
}

// noteUse records the start of a request and closes the idle connections
// when more than [IdleTimeout] of wall-clock time passed since the last
// one. The transports' own idle timers may not have run meanwhile: a
// suspended machine's monotonic clock stands still.
func (c *Client) noteUse() {
	now := c.now().UnixNano()
	last := c.last.Swap(now)
	if last != 0 && time.Duration(now-last) > IdleTimeout {
		c.CloseIdleConnections()
	}
}

// URL returns the relay's base URL.
func (c *Client) URL() string { return c.base }

// Send posts payload, the JSON text of a signed message, to the queue of
// route. Any 2xx reply means the relay accepted it. A non-2xx reply is a
// [*StatusError]; [StatusError.Permanent] tells a refusal from a failure
// worth retrying.
func (c *Client) Send(ctx context.Context, route string, payload []byte) error {
	body, err := wire.SendBody(route, payload)
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
	body, err := c.do(ctx, "recv", http.MethodGet, wire.RecvTarget(route, wait), nil, wait+recvGrace, recvLimit)
	if err != nil {
		return Delivery{}, err
	}
	reply, err := wire.DecodeRecvAnswer(body)
	if err != nil {
		return Delivery{}, fmt.Errorf("%w: recv from %s: %w", ErrMalformed, c.base, err)
	}
	if reply.Status != "message" {
		return Delivery{}, nil
	}
	if !reply.HasAck {
		return Delivery{}, fmt.Errorf("%w: recv from %s: message without an ack key", ErrMalformed, c.base)
	}
	return Delivery{HasMessage: true, Ack: reply.Ack, Payload: reply.Payload}, nil
}

// Ack removes the message with key ack from the queue of route. Acks are
// idempotent: an unknown key of the right route succeeds.
func (c *Client) Ack(ctx context.Context, route, ack string) error {
	_, err := c.do(ctx, "ack", http.MethodPost, "/ack", wire.AppendAck(nil, route, ack), ackTimeout, 0)
	return err
}

// Announce posts a signed presence announcement.
func (c *Client) Announce(ctx context.Context, a identity.Announcement) error {
	body, err := wire.AnnounceBody(a)
	if err != nil {
		return fmt.Errorf("relay: announce: encode: %w", err)
	}
	_, err = c.do(ctx, "announce", http.MethodPost, "/announce", body, announceTimeout, 0)
	return err
}

// Unregister removes the roster entry of pubkey's session s. A relay that
// checks signatures takes it only signed by pubkey ([Options.Signer]).
func (c *Client) Unregister(ctx context.Context, pubkey string, s identity.SessionInfo) error {
	body, err := wire.UnregisterBody(pubkey, s)
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
	elems, err := wire.RosterElements(body)
	if err != nil {
		return nil, fmt.Errorf("%w: %v (from %s)", ErrMalformed, err, c.base)
	}
	return elems, nil
}

// do makes one request with its own timeout and returns the body of a 2xx
// reply, read up to limit bytes. With limit 0 the body is drained up to
// smallLimit and discarded, so that the connection can be reused. A non-2xx
// reply is a *StatusError. Long-polls (op "recv") go through the poll
// client.
//
// When the request fails on a reused connection before any reply, and op
// is [repeatable], it is sent once more: a kept connection that the relay
// or the network dropped fails this way, and the second try dials a new
// one. A failure on a new connection is returned as it is.
func (c *Client) do(ctx context.Context, op, method, path string, body []byte, timeout time.Duration, limit int64) ([]byte, error) {
	r, err := c.exchange(ctx, op, method, path, body, timeout, limit, nil)
	return r.body, err
}

// exchanged is what [Client.exchange] keeps of an answer.
type exchanged struct {
	body   []byte
	status int
	header http.Header
}

// exchange is [Client.do] with extra request headers (nil for none),
// keeping the answer's status and headers. A request with If-None-Match
// also takes 304 as an answer, with no body.
func (c *Client) exchange(ctx context.Context, op, method, path string, body []byte, timeout time.Duration, limit int64, hdr http.Header) (exchanged, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	hc := c.hc
	if op == "recv" {
		hc = c.poll
	}
	c.noteUse()
	var (
		req  *http.Request
		resp *http.Response
		err  error
	)
	for try := 0; ; try++ {
		var reused atomic.Bool
		req, err = c.newRequest(ctx, method, path, body, &reused)
		if err != nil {
			return exchanged{}, fmt.Errorf("relay: %s request failed: %w", op, err)
		}
		for k, v := range hdr {
			req.Header[k] = v
		}
		resp, err = hc.Do(req)
		if err == nil || !reused.Load() || try > 0 || !repeatable[op] || ctx.Err() != nil {
			break
		}
		c.log.Debug("relay connection was dead; trying a new one", "relay", c.base, "op", op, "err", err)
	}
	if err != nil {
		return exchanged{}, transportError(op, c.base, err)
	}
	defer resp.Body.Close()
	c.noteMaxBody(resp.Header)
	r := exchanged{status: resp.StatusCode, header: resp.Header}
	if resp.StatusCode == http.StatusNotModified && hdr.Get("If-None-Match") != "" {
		_, _ = io.CopyN(io.Discard, resp.Body, smallLimit)
		return r, nil
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		if err := tlsfiles.CheckResponse(resp); err != nil {
			return exchanged{}, &TLSError{Op: op, URL: c.base, Sentence: tlsfiles.Explain(err), Err: err}
		}
		return exchanged{}, statusError(req, op, resp)
	}
	if limit == 0 {
		_, _ = io.CopyN(io.Discard, resp.Body, smallLimit)
		return r, nil
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return exchanged{}, fmt.Errorf("relay: %s: read reply: %w", op, err)
	}
	if int64(len(b)) > limit {
		return exchanged{}, fmt.Errorf("%w: %s from %s: over %d bytes", ErrTooLarge, op, c.base, limit)
	}
	r.body = b
	return r, nil
}

// MaxBody returns the largest /send request body the relay takes, as the
// last of its answers that said so gave it; ok is false when none did,
// as the original's relays never do (they take 2 MiB). interlink-bus
// says it in every answer, and takes less than 2 MiB when its store does,
// such as a NATS server with a smaller max_payload. The value comes from
// the relay and is a hint: it can only make the agent expect a refusal
// from that relay.
func (c *Client) MaxBody() (limit int64, ok bool) {
	limit = c.maxBody.Load()
	return limit, limit > 0
}

// noteMaxBody records the relay's limit from h, when h gives one.
func (c *Client) noteMaxBody(h http.Header) {
	if n, ok := wire.ParseMaxBody(h); ok {
		c.maxBody.Store(n)
	}
}

// newRequest builds a request whose trace sets reused when it gets a
// connection that served an earlier request.
func (c *Client) newRequest(ctx context.Context, method, path string, body []byte, reused *atomic.Bool) (*http.Request, error) {
	trace := &httptrace.ClientTrace{GotConn: func(info httptrace.GotConnInfo) { reused.Store(info.Reused) }}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(ctx, trace), method, c.base+path, rd)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.signer != nil {
		// Every try is signed anew: a relay refuses a nonce it has seen.
		if err := reqsign.Sign(req, body, c.signer, c.now()); err != nil {
			return nil, err
		}
	}
	return req, nil
}

// statusError reads the start of resp's body into a [*StatusError].
func statusError(req *http.Request, op string, resp *http.Response) *StatusError {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, excerptLimit))
	se := &StatusError{
		URL:  req.URL.String(),
		Op:   op,
		Code: resp.StatusCode,
		Body: untrusted.Clean(string(b)),
	}
	se.RetryAfter, _ = wire.ParseRetryAfter(resp.Header)
	return se
}

// transportError wraps a failed request, as a [*TLSError] when the
// failure is one of TLS that a person can act on.
func transportError(op, base string, err error) error {
	if sentence := tlsfiles.Explain(err); sentence != "" {
		return &TLSError{Op: op, URL: base, Sentence: sentence, Err: err}
	}
	return fmt.Errorf("relay: %s request failed: %w", op, err)
}
