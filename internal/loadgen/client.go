package loadgen

import (
	"bytes"
	"context"
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

	"github.com/interlink-go/interlink/internal/wire"
)

// requestTimeout bounds every request that is not a long-poll.
const requestTimeout = 10 * time.Second

// pollSlack is how much longer than its timeout_ms a long-poll may take
// before the client gives up on it.
const pollSlack = 5 * time.Second

// errTimeout reports a /recv that found no message before its deadline.
var errTimeout = errors.New("recv: no message before the deadline")

// client speaks the bus's HTTP API. Its transport is configured as the real
// agents configure theirs: without keep-alive, every request opens and
// closes its own TCP connection.
type client struct {
	base string // the bus URL without a trailing slash
	hc   *http.Client
	tr   *http.Transport

	dials atomic.Int64 // TCP connections opened so far
}

// newClient returns a client for the bus at base. With keepAlive false every
// request uses a new connection; with it true up to conns idle connections
// are kept for reuse.
func newClient(base string, keepAlive bool, conns int) *client {
	c := &client{base: trimSlash(base)}
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

// close drops the client's idle connections.
func (c *client) close() { c.tr.CloseIdleConnections() }

func trimSlash(s string) string {
	for len(s) > 0 && s[len(s)-1] == '/' {
		s = s[:len(s)-1]
	}
	return s
}

// send posts payload, a compact JSON value, to route and expects 202.
func (c *client) send(ctx context.Context, route string, payload []byte) error {
	body := wire.AppendSend(make([]byte, 0, wire.SendBodyLen(route, len(payload))), route, payload)
	return c.post(ctx, "/send", body, http.StatusAccepted)
}

// ack acknowledges the message with ack key key on route and expects 200.
func (c *client) ack(ctx context.Context, route, key string) error {
	return c.post(ctx, "/ack", wire.AppendAck(nil, route, key), http.StatusOK)
}

// message is one message as /recv returns it.
type message struct {
	ack     string
	payload []byte // the payload's JSON text
}

// recv long-polls route for up to wait and returns the head message, or
// [errTimeout] when there was none.
func (c *client) recv(ctx context.Context, route string, wait time.Duration) (message, error) {
	ctx, cancel := context.WithTimeout(ctx, wait+pollSlack)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+wire.RecvTarget(route, wait), nil)
	if err != nil {
		return message{}, err
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return message{}, err
	}
	defer drain(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return message{}, fmt.Errorf("recv: status %d", resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxReply))
	if err != nil {
		return message{}, fmt.Errorf("recv: %v", err)
	}
	a, err := wire.DecodeRecvAnswer(body)
	if err != nil {
		return message{}, fmt.Errorf("recv: %v", err)
	}
	switch a.Status {
	case "message":
		return message{ack: a.Ack, payload: a.Payload}, nil
	case "timeout":
		return message{}, errTimeout
	default:
		return message{}, fmt.Errorf("recv: status %q", a.Status)
	}
}

// post sends body as JSON to path and requires status want.
func (c *client) post(ctx context.Context, path string, body []byte, want int) error {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.hc.Do(req)
	if err != nil {
		return err
	}
	drain(resp.Body)
	if resp.StatusCode != want {
		return &statusError{path: path, code: resp.StatusCode}
	}
	return nil
}

// statusError is a reply with another status than the one expected.
type statusError struct {
	path string
	code int
}

func (e *statusError) Error() string { return fmt.Sprintf("%s: status %d", e.path, e.code) }

// metrics reads the bus's /metrics and returns the samples without labels
// among names, by name. A bus that serves no metrics (the original) gives
// none and no error.
func (c *client) metrics(ctx context.Context, names ...string) (map[string]float64, error) {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer drain(resp.Body)
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

// get fetches path and requires 200.
func (c *client) get(ctx context.Context, path string) error {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+path, nil)
	if err != nil {
		return err
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return err
	}
	drain(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: status %d", path, resp.StatusCode)
	}
	return nil
}

// drain reads the rest of a response body and closes it, which lets a
// keep-alive connection be reused.
func drain(body io.ReadCloser) {
	io.Copy(io.Discard, io.LimitReader(body, 4<<20))
	body.Close()
}

// maxReply bounds the /recv reply the client reads: the bus's largest
// body, its envelope and the ack key fit well inside.
const maxReply = 4 << 20
