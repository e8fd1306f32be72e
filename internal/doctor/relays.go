package doctor

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/interlink-go/interlink/internal/host"
	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/relay"
)

// Clock offsets against a relay. Peers drop a message dated more than 60 s
// in their future, so an offset near that loses messages in one direction;
// a few seconds are normal between machines.
const (
	skewWarn = 10 * time.Second
	skewFail = 50 * time.Second
)

// relays checks each relay: reachable, its clock, this session on its
// roster.
func (r *report) relays(ctx context.Context, cfg Config, own identity.PublicKey, haveKey bool) {
	urls, err := relay.ParseURLs(cfg.URLs)
	if err != nil {
		r.add("relays", "relay URLs", Fail, oneLine(err.Error()), "fix --url / INTERLINK_URL: a comma-separated list of https:// or http:// URLs")
		return
	}
	for _, u := range urls {
		c := relay.New(u, &relay.Options{HTTPClient: cfg.HTTPClient})
		if !r.relay(ctx, c) {
			continue
		}
		if haveKey {
			r.roster(ctx, cfg, c, own)
		}
	}
}

// relay checks that the relay answers /healthz and compares clocks. It
// reports whether the relay answered.
func (r *report) relay(ctx context.Context, c *relay.Client) bool {
	name := "relay " + c.URL()
	h, err := c.Health(ctx)
	if te, ok := errors.AsType[*relay.TLSError](err); ok {
		r.add("relay", name, Fail, te.Sentence,
			"fix the relay's certificate or the URL's scheme; a private authority's certificate goes in SSL_CERT_FILE or SSL_CERT_DIR")
		return false
	}
	if err != nil {
		r.add("relay", name, Fail, "no answer: "+oneLine(err.Error()),
			"start interlink-bus there, or point --url / INTERLINK_URL at a running bus")
		return false
	}
	detail := fmt.Sprintf("answered in %s", h.RTT.Round(100*time.Microsecond))
	if h.Version != "" {
		detail += ", interlink-bus " + h.Version
	}
	r.add("relay", name, OK, detail, "")
	r.bodyLimit(c.URL(), h.MaxBody)

	cname := "clock against " + c.URL()
	off, ok := h.ClockOffset()
	if !ok {
		r.add("clock", cname, Warn, "the relay sent no Date header, so the clocks could not be compared", "")
		return true
	}
	abs := off.Abs().Round(time.Second)
	var detail2 string
	if off > 0 {
		detail2 = fmt.Sprintf("this machine's clock is %s behind the relay's", abs)
	} else {
		detail2 = fmt.Sprintf("this machine's clock is %s ahead of the relay's", abs)
	}
	switch {
	case off.Abs() >= skewFail && off > 0:
		r.add("clock", cname, Fail, detail2+": messages from peers with correct clocks look more than 60 s in the future here and are dropped",
			"set this machine's clock right (NTP), or the relay's if it is the one that is off")
	case off.Abs() >= skewFail:
		r.add("clock", cname, Fail, detail2+": peers with correct clocks drop what this session sends as more than 60 s in the future",
			"set this machine's clock right (NTP), or the relay's if it is the one that is off")
	case off.Abs() >= skewWarn:
		r.add("clock", cname, Warn, detail2+"; at 60 s peers start dropping messages", "keep the clocks in step with NTP")
	default:
		r.add("clock", cname, OK, fmt.Sprintf("within %s of the relay's clock", max(abs, time.Second)), "")
	}
	return true
}

// fullBody is the largest /send body the original's relays take, and
// interlink-bus unless its store takes less.
const fullBody = 2 << 20

// bodyLimit reports the relay's limit on /send bodies, which its /healthz
// answer gives (0 when it does not say). A limit below 2 MiB comes from
// the bus's store, a NATS server with a smaller max_payload: messages
// beyond it are refused there for good.
func (r *report) bodyLimit(url string, limit int64) {
	name := "message size at " + url
	switch {
	case limit == 0:
		r.add("size", name, OK, "the relay does not say its limit; relays that do not say take bodies of up to 2 MiB", "")
	case limit >= fullBody:
		r.add("size", name, OK, fmt.Sprintf("takes message bodies of up to %d bytes", limit), "")
	default:
		r.add("size", name, Warn, fmt.Sprintf("takes message bodies of up to %d bytes only, less than the 2 MiB other relays take: "+
			"a longer message is refused there, and send_message refuses one that no relay takes", limit),
			"raise max_payload of the relay's NATS server (max_payload: 4MB takes every body of up to 2 MiB), then restart the bus")
	}
}

// roster checks that this session, or at least this identity, is on the
// relay's roster.
func (r *report) roster(ctx context.Context, cfg Config, c *relay.Client, own identity.PublicKey) {
	name := "roster of " + c.URL()
	ros := relay.FetchRoster(ctx, []*relay.Client{c})
	if len(ros.Failures) > 0 {
		r.add("roster", name, Warn, "could not be read: "+oneLine(ros.Failures[0]), "check the relay's log")
		return
	}
	var sessions []relay.Entry
	for _, e := range ros.Entries {
		if e.Key == own && e.Session.SessionID != "" {
			sessions = append(sessions, e)
		}
	}
	if cfg.Session == "" {
		if len(sessions) == 0 {
			r.add("roster", name, Warn, fmt.Sprintf("no session of identity %s is on it", own.Fingerprint()),
				"start a session, or pass --session to check one")
			return
		}
		ids := make([]string, len(sessions))
		for i, e := range sessions {
			ids[i] = e.Session.SessionID
		}
		r.add("roster", name, OK, fmt.Sprintf("identity %s has %d %s on it: %s (pass --session to check one)",
			own.Fingerprint(), len(ids), plural(len(ids), "session", "sessions"), strings.Join(ids, ", ")), "")
		return
	}
	for _, e := range sessions {
		if e.Session.SessionID != cfg.Session {
			continue
		}
		ago := (time.Duration(e.AgeMS) * time.Millisecond).Round(time.Second)
		if !e.Live {
			r.add("roster", name, Warn, fmt.Sprintf("session %s was last announced %s ago and shows as away", cfg.Session, ago),
				"is its server still running? a running server announces itself every 30 s")
			return
		}
		r.add("roster", name, OK, fmt.Sprintf("session %s is on it, announced %s ago", cfg.Session, ago), "")
		return
	}
	fix := "is its server running? it announces itself when it starts and every 30 s"
	if cfg.Host == host.Codex {
		fix = "a Codex session appears once its hooks bind it: trust them in /hooks and send a prompt"
	}
	r.add("roster", name, Fail, fmt.Sprintf("session %s is not on it, so peers cannot find it", cfg.Session), fix)
}
