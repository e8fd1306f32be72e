package loadgen

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
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

// send posts payload, a JSON value, to route and expects 202.
func (c *client) send(ctx context.Context, route string, payload []byte) error {
	body := make([]byte, 0, len(route)+len(payload)+32)
	body = append(body, `{"to":`...)
	body = appendJSONString(body, route)
	body = append(body, `,"payload":`...)
	body = append(body, payload...)
	body = append(body, '}')
	return c.post(ctx, "/send", body, http.StatusAccepted)
}

// ack acknowledges the message with ack key key on route and expects 200.
func (c *client) ack(ctx context.Context, route, key string) error {
	body := make([]byte, 0, len(route)+len(key)+32)
	body = append(body, `{"me":`...)
	body = appendJSONString(body, route)
	body = append(body, `,"ack":`...)
	body = appendJSONString(body, key)
	body = append(body, '}')
	return c.post(ctx, "/ack", body, http.StatusOK)
}

// message is one message as /recv returns it.
type message struct {
	ack     string
	payload []byte // the payload's JSON text
}

// recvReply is the JSON shape of a /recv response.
type recvReply struct {
	Status   string `json:"status"`
	Ack      string `json:"ack"`
	Envelope struct {
		Payload json.RawMessage `json:"payload"`
	} `json:"envelope"`
}

// recv long-polls route for up to wait and returns the head message, or
// [errTimeout] when there was none.
func (c *client) recv(ctx context.Context, route string, wait time.Duration) (message, error) {
	ctx, cancel := context.WithTimeout(ctx, wait+pollSlack)
	defer cancel()
	u := c.base + "/recv?me=" + url.QueryEscape(route) + "&timeout_ms=" + strconv.FormatInt(wait.Milliseconds(), 10)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
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
	r, ok := parseBusReply(body)
	if !ok {
		if err := json.Unmarshal(body, &r); err != nil {
			return message{}, fmt.Errorf("recv: %v", err)
		}
	}
	switch r.Status {
	case "message":
		return message{ack: r.Ack, payload: r.Envelope.Payload}, nil
	case "timeout":
		return message{}, errTimeout
	default:
		return message{}, fmt.Errorf("recv: status %q", r.Status)
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

// parseBusReply reads a /recv reply in the exact form interlink-bus writes,
//
//	{"ack":"KEY","envelope":{"payload":PAYLOAD,"ts":N},"status":"message"}
//
// or {"status":"timeout"}, without reflection, so that decoding costs the
// load generator little of the CPU it shares with an in-process bus. The
// ack key may hold only printable ASCII and \u0000 escapes. It reports false
// for any other form, which json.Unmarshal then reads.
func parseBusReply(b []byte) (recvReply, bool) {
	var r recvReply
	if string(b) == `{"status":"timeout"}` {
		r.Status = "timeout"
		return r, true
	}
	const (
		head = `{"ack":"`
		mid  = `","envelope":{"payload":`
		tail = `,"status":"message"}`
	)
	if !bytes.HasPrefix(b, []byte(head)) || !bytes.HasSuffix(b, []byte(tail)) {
		return r, false
	}
	rest := b[len(head) : len(b)-len(tail)]
	end := bytes.Index(rest, []byte(mid))
	if end < 0 {
		return r, false
	}
	key := make([]byte, 0, end)
	for i := 0; i < end; i++ {
		switch c := rest[i]; {
		case c == '\\' && bytes.HasPrefix(rest[i:end], []byte(`\u0000`)):
			key = append(key, 0)
			i += len(`\u0000`) - 1
		case c == '\\' || c == '"' || c < 0x20 || c >= 0x80:
			return r, false
		default:
			key = append(key, c)
		}
	}
	env := rest[end+len(mid):] // PAYLOAD,"ts":N}
	ts := bytes.LastIndex(env, []byte(`,"ts":`))
	if ts < 0 || len(env) == 0 || env[len(env)-1] != '}' {
		return r, false
	}
	for _, c := range env[ts+len(`,"ts":`) : len(env)-1] {
		if c < '0' || c > '9' {
			return r, false
		}
	}
	r.Status, r.Ack, r.Envelope.Payload = "message", string(key), env[:ts]
	return r, true
}

// appendJSONString appends s as a JSON string.
func appendJSONString(dst []byte, s string) []byte {
	plain := true
	for i := 0; i < len(s) && plain; i++ {
		plain = s[i] >= 0x20 && s[i] < 0x80 && s[i] != '"' && s[i] != '\\'
	}
	if plain {
		dst = append(dst, '"')
		dst = append(dst, s...)
		return append(dst, '"')
	}
	b, err := json.Marshal(s)
	if err != nil {
		// A Go string always encodes.
		panic(err)
	}
	return append(dst, b...)
}
