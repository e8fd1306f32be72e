package relay

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/interlink-go/interlink/internal/tlsfiles"
	"github.com/interlink-go/interlink/internal/untrusted"
	"github.com/interlink-go/interlink/internal/wire"
)

// healthTimeout bounds a health check.
const healthTimeout = 5 * time.Second

// Health is what one /healthz request told about a relay.
type Health struct {
	// RTT is the time from sending the request to reading the whole reply.
	RTT time.Duration
	// Sent and Received are the local clock when the request went out and
	// when its reply was read; the relay's clock read Date somewhere in
	// between.
	Sent, Received time.Time
	// Date is the relay's Date header, zero when it sent none. It has a
	// resolution of one second.
	Date time.Time
	// Version is the bus's version header, cleaned and capped like a
	// roster name, or "" when the bus does not report one.
	Version string
	// MaxBody is the largest /send body the bus says it takes, or 0 when
	// it does not say (see [Client.MaxBody]).
	MaxBody int64
}

// ClockOffset estimates how far the relay's clock is ahead of the local
// one (negative: behind), taking Date as read halfway through the request.
// Date is truncated to whole seconds, so the estimate may be up to a
// second low; ok is false without a Date header.
func (h Health) ClockOffset() (offset time.Duration, ok bool) {
	if h.Date.IsZero() {
		return 0, false
	}
	mid := h.Sent.Add(h.Received.Sub(h.Sent) / 2)
	// Date drops the fraction of its second: compare with the middle of
	// that second.
	return h.Date.Add(500 * time.Millisecond).Sub(mid), true
}

// Health asks the relay's /healthz whether it is serving. A non-2xx reply
// is a [*StatusError].
func (c *Client) Health(ctx context.Context) (Health, error) {
	ctx, cancel := context.WithTimeout(ctx, healthTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/healthz", nil)
	if err != nil {
		return Health{}, fmt.Errorf("relay: health request failed: %w", err)
	}
	c.noteUse()
	h := Health{Sent: time.Now()}
	resp, err := c.hc.Do(req)
	if err != nil {
		return Health{}, transportError("health", c.base, err)
	}
	defer resp.Body.Close()
	c.noteMaxBody(resp.Header)
	if err := tlsfiles.CheckResponse(resp); err != nil {
		return Health{}, &TLSError{Op: "health", URL: c.base, Sentence: tlsfiles.Explain(err), Err: err}
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, smallLimit))
	h.Received = time.Now()
	h.RTT = h.Received.Sub(h.Sent)
	if err != nil {
		return Health{}, fmt.Errorf("relay: health: read reply: %w", err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return Health{}, &StatusError{URL: req.URL.String(), Op: "health", Code: resp.StatusCode,
			Body: untrusted.Clean(string(body[:min(len(body), excerptLimit)]))}
	}
	if d, err := http.ParseTime(resp.Header.Get("Date")); err == nil {
		h.Date = d
	}
	h.Version = untrusted.Name(resp.Header.Get(wire.VersionHeader))
	h.MaxBody, _ = wire.ParseMaxBody(resp.Header)
	return h, nil
}
