package relay

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/wire"
)

// keptRoster is the last whole roster a relay served with an entity tag:
// its elements, the tag, when it arrived, and once checked, its elements
// decoded and verified. Guarded by mu.
type keptRoster struct {
	mu      sync.Mutex
	tag     string
	elems   []json.RawMessage
	at      time.Time
	checked *checkedRoster // nil until rosterChecked checks elems
}

// RosterRevalidated returns the relay's roster like [Client.Roster], but
// asks with the tag of the last roster it served (If-None-Match), so that
// a relay whose roster has not changed answers 304 with no body and the
// kept elements are returned again. since is how long ago the relay
// served the returned elements: 0 for a fresh answer, else the time since
// the kept one arrived, which the caller adds to each entry's age_ms (a
// tag names the entries and the moments they were announced, so only
// their ages moved on). A relay that sends no tag, as the original's do,
// is read whole every time.
func (c *Client) RosterRevalidated(ctx context.Context) (elems []json.RawMessage, since time.Duration, err error) {
	c.kept.mu.Lock()
	tag, kept, at := c.kept.tag, c.kept.elems, c.kept.at
	c.kept.mu.Unlock()
	var hdr http.Header
	if tag != "" {
		hdr = http.Header{"If-None-Match": {tag}}
	}
	r, err := c.exchange(ctx, "roster", http.MethodGet, "/roster", nil, rosterTimeout, rosterLimit, hdr)
	if err != nil {
		return nil, 0, err
	}
	if r.status == http.StatusNotModified {
		return kept, max(c.now().Sub(at), 0), nil
	}
	elems, err = wire.RosterElements(r.body)
	if err != nil {
		return nil, 0, fmt.Errorf("%w: %v (from %s)", ErrMalformed, err, c.base)
	}
	c.kept.mu.Lock()
	c.kept.tag, c.kept.elems, c.kept.at, c.kept.checked = r.header.Get("ETag"), elems, c.now(), nil
	if c.kept.tag == "" {
		c.kept.elems = nil // nothing to revalidate with; keep no copy
	}
	c.kept.mu.Unlock()
	return elems, 0, nil
}

// rosterChecked is [Client.RosterRevalidated] with the elements decoded
// and verified ([checkElems]), which for a kept roster is done once: a
// relay that answers 304 hands back what was checked before.
func (c *Client) rosterChecked(ctx context.Context) (*checkedRoster, time.Duration, error) {
	elems, since, err := c.RosterRevalidated(ctx)
	if err != nil {
		return nil, 0, err
	}
	c.kept.mu.Lock()
	kept := sameElems(c.kept.elems, elems)
	cr := c.kept.checked
	c.kept.mu.Unlock()
	if kept && cr != nil {
		return cr, since, nil
	}
	cr = checkElems(elems)
	if kept {
		c.kept.mu.Lock()
		// Kept only if no newer roster replaced these elements meanwhile.
		if sameElems(c.kept.elems, elems) {
			c.kept.checked = cr
		}
		c.kept.mu.Unlock()
	}
	return cr, since, nil
}

// sameElems reports whether a and b are the same slice of elements (not
// merely equal ones): the kept roster and what RosterRevalidated returned.
func sameElems(a, b []json.RawMessage) bool {
	return len(a) == len(b) && len(a) > 0 && &a[0] == &b[0]
}

// RosterOf returns the relay's roster entries of the given keys, at most
// [wire.MaxRosterKeys], by the lookup GET /roster?keys=K1,K2: a few
// entries instead of the whole roster. A relay that does not know the
// lookup, as the original's do, ignores the query and serves the whole
// roster, which is as correct and only larger; [FetchRosterOf] keeps the
// asked keys alone either way.
func (c *Client) RosterOf(ctx context.Context, keys []identity.PublicKey) ([]json.RawMessage, error) {
	if len(keys) == 0 || len(keys) > wire.MaxRosterKeys {
		return nil, fmt.Errorf("relay: a roster lookup takes 1 to %d keys, not %d", wire.MaxRosterKeys, len(keys))
	}
	var b strings.Builder
	b.WriteString("/roster?keys=")
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(k.String()) // base64url: nothing to escape
	}
	body, err := c.do(ctx, "roster", http.MethodGet, b.String(), nil, rosterTimeout, rosterLimit)
	if err != nil {
		return nil, err
	}
	elems, err := wire.RosterElements(body)
	if err != nil {
		return nil, fmt.Errorf("%w: %v (from %s)", ErrMalformed, err, c.base)
	}
	return elems, nil
}
