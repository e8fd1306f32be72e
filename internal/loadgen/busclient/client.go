// Package busclient is the load generator's client of a bus's HTTP API:
// requests built and answers read by package wire, on a transport set up
// as the agents set up theirs, counting the connections it opens.
package busclient

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/interlink-go/interlink/internal/reqsign"
	"github.com/interlink-go/interlink/internal/wire"
)

// RequestTimeout bounds every request that is not a long-poll.
const RequestTimeout = 10 * time.Second

// pollSlack is how much longer than its timeout_ms a long-poll may take
// before the client gives up on it.
const pollSlack = 5 * time.Second

// ErrTimeout reports a /recv that found no message before its deadline.
var ErrTimeout = errors.New("recv: no message before the deadline")

// Client speaks the bus's HTTP API. Its transport is configured as the real
// agents configure theirs: without keep-alive, every request opens and
// closes its own TCP connection.
type Client struct {
	base string // the bus URL without a trailing slash
	hc   *http.Client
	tr   *http.Transport

	signer reqsign.Signer // signs every request when set; see As
	dials  *atomic.Int64  // TCP connections opened so far; see Dials
}

// New returns a client for the bus at base. With keepAlive false every
// request uses a new connection; with it true up to conns idle connections
// are kept for reuse.
func New(base string, keepAlive bool, conns int) *Client {
	c := &Client{base: TrimSlash(base), dials: new(atomic.Int64)}
	d := &net.Dialer{Timeout: 5 * time.Second}
	c.tr = &http.Transport{
		// Never through a proxy from the environment: the load goes to
		// the address given, or nowhere.
		Proxy: nil,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			conn, err := d.DialContext(ctx, network, addr)
			if err == nil {
				c.dials.Add(1)
			}
			return conn, err
		},
		DisableKeepAlives:   !keepAlive,
		MaxIdleConns:        max(conns, 2),
		MaxIdleConnsPerHost: max(conns, 2),
		IdleConnTimeout:     30 * time.Second,
		DisableCompression:  true,
	}
	c.hc = &http.Client{Transport: c.tr}
	return c
}

// Trust makes the client speak TLS with cfg to a base URL of https://.
// Call it before the first request.
func (c *Client) Trust(cfg *tls.Config) { c.tr.TLSClientConfig = cfg }

// As returns a client that shares c's connections and count of dials and
// signs every request with s (package reqsign), as an agent signs its
// requests to a bus.
func (c *Client) As(s reqsign.Signer) *Client {
	return &Client{base: c.base, hc: c.hc, tr: c.tr, signer: s, dials: c.dials}
}

// do signs req, whose body is body, when the client has a signer, and
// sends it.
func (c *Client) do(req *http.Request, body []byte) (*http.Response, error) {
	if c.signer != nil {
		if err := reqsign.Sign(req, body, c.signer, time.Now()); err != nil {
			return nil, err
		}
	}
	return c.hc.Do(req)
}

// Close drops the client's idle connections.
func (c *Client) Close() { c.tr.CloseIdleConnections() }

func TrimSlash(s string) string {
	for len(s) > 0 && s[len(s)-1] == '/' {
		s = s[:len(s)-1]
	}
	return s
}

// Send posts payload, a compact JSON value, to route and expects 202.
//
// A send that has started runs to its answer even when ctx ends
// meanwhile (for at most [sendFinish] more), so that a message is either
// known to be queued or known not to be: a send cut off mid-request could
// still be queued by the bus after the caller drained the route. ctx only
// keeps a send from starting.
func (c *Client) Send(ctx context.Context, route string, payload []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	body := wire.AppendSend(make([]byte, 0, wire.SendBodyLen(route, len(payload))), route, payload)
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	stop := context.AfterFunc(ctx, func() { time.AfterFunc(sendFinish, cancel) })
	defer stop()
	return c.Post(sctx, "/send", body, http.StatusAccepted)
}

// sendFinish is how long a started send may go on after its context ended.
const sendFinish = time.Second

// Ack acknowledges the message with ack key key on route and expects 200.
func (c *Client) Ack(ctx context.Context, route, key string) error {
	return c.Post(ctx, "/ack", wire.AppendAck(nil, route, key), http.StatusOK)
}

// Message is one message as /recv returns it.
type Message struct {
	Ack     string
	Payload []byte // the payload's JSON text
}

// Recv long-polls route for up to wait and returns the head message, or
// [ErrTimeout] when there was none.
func (c *Client) Recv(ctx context.Context, route string, wait time.Duration) (Message, error) {
	ctx, cancel := context.WithTimeout(ctx, wait+pollSlack)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+wire.RecvTarget(route, wait), nil)
	if err != nil {
		return Message{}, err
	}
	resp, err := c.do(req, nil)
	if err != nil {
		return Message{}, err
	}
	defer Drain(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return Message{}, fmt.Errorf("recv: status %d", resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxReply))
	if err != nil {
		return Message{}, fmt.Errorf("recv: %v", err)
	}
	a, err := wire.DecodeRecvAnswer(body)
	if err != nil {
		return Message{}, fmt.Errorf("recv: %v", err)
	}
	switch a.Status {
	case "message":
		return Message{Ack: a.Ack, Payload: a.Payload}, nil
	case "timeout":
		return Message{}, ErrTimeout
	default:
		return Message{}, fmt.Errorf("recv: status %q", a.Status)
	}
}

// Post sends body as JSON to path and requires status want.
func (c *Client) Post(ctx context.Context, path string, body []byte, want int) error {
	ctx, cancel := context.WithTimeout(ctx, RequestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.do(req, body)
	if err != nil {
		return err
	}
	Drain(resp.Body)
	if resp.StatusCode != want {
		return &StatusError{Path: path, Code: resp.StatusCode}
	}
	return nil
}

// StatusError is a reply with another status than the one expected.
type StatusError struct {
	Path string
	Code int
}

func (e *StatusError) Error() string { return fmt.Sprintf("%s: status %d", e.Path, e.Code) }

// Metrics reads the bus's /metrics and returns the samples without labels
// among names, by name. A bus that serves no metrics (the original) gives
// none and no error.
func (c *Client) Metrics(ctx context.Context, names ...string) (map[string]float64, error) {
	ctx, cancel := context.WithTimeout(ctx, RequestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer Drain(resp.Body)
	out := make(map[string]float64)
	if resp.StatusCode != http.StatusOK {
		return out, nil
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxReply))
	if err != nil {
		return nil, err
	}
	for line := range strings.Lines(string(body)) {
		name, v, ok := strings.Cut(strings.TrimSpace(line), " ")
		if !ok || !slices.Contains(names, name) {
			continue
		}
		if f, err := strconv.ParseFloat(v, 64); err == nil {
			out[name] = f
		}
	}
	return out, nil
}

// Get fetches path and requires 200.
func (c *Client) Get(ctx context.Context, path string) error {
	ctx, cancel := context.WithTimeout(ctx, RequestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+path, nil)
	if err != nil {
		return err
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return err
	}
	Drain(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: status %d", path, resp.StatusCode)
	}
	return nil
}

// Drain reads the rest of a response body and closes it, which lets a
// keep-alive connection be reused.
func Drain(body io.ReadCloser) {
	io.Copy(io.Discard, io.LimitReader(body, 4<<20))
	body.Close()
}

// maxReply bounds the /recv reply the client reads: the bus's largest
// body, its envelope and the ack key fit well inside.
const maxReply = 4 << 20

// Dials returns how many TCP connections the client has opened.
func (c *Client) Dials() int64 { return c.dials.Load() }
