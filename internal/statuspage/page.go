package statuspage

import (
	"bytes"
	"cmp"
	_ "embed"
	"fmt"
	"html/template"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/interlink-go/interlink/internal/roster"
	"github.com/interlink-go/interlink/internal/untrusted"
	"github.com/interlink-go/interlink/internal/wire"
)

// statusLive is how recently a session must have announced itself to show
// as live: agents announce every 30 s, so a live one has missed at most two.
// It is the agents' own rule for "live" in discover.
const statusLive = 90 * time.Second

// statusRefresh is how often the status page reloads itself.
const statusRefresh = 10 * time.Second

// statusSessionLimit bounds the sessions listed on the page; the roster
// holds up to [roster.Cap], which no one reads on a page.
const statusSessionLimit = 500

//go:embed status.html
var statusHTML string

// statusPage is the template of the page. html/template escapes every
// value by its context, so a roster name can be anything and still only
// ever be text.
var statusPage = template.Must(template.New("status").Funcs(template.FuncMap{
	"ago": func(d time.Duration) string { return ago(d) },
}).Parse(statusHTML))

// statusData is what the page shows.
type statusData struct {
	Version  string
	Uptime   string
	Refresh  int
	Totals   bool // whether the store reported Routes and Queued
	Routes   int
	Queued   int
	Parked   int
	Sessions []statusSession
	Omitted  int // sessions beyond statusSessionLimit
	Live     int
	Chart    chart
}

// statusSession is one roster entry as the page shows it. Everything in it
// is what some client announced, cleaned as agents clean it for display;
// the bus verifies nothing.
type statusSession struct {
	Name        string
	Fingerprint string
	Session     string
	Summary     string
	Live        bool
	Age         time.Duration
}

// PageAge is how long a rendered page is served again before the next
// request renders it anew. People read the page, which reloads itself
// every ten seconds; a second's delay is nothing to them, and however
// often clients ask, the bus renders it at most about once a second.
const PageAge = time.Second

// renderedPage is a page and the wall-clock time it was rendered.
type renderedPage struct {
	at   time.Time
	body []byte
}

// Counts are the queue figures the page shows, as the bus reads them at
// one moment.
type Counts struct {
	// Parked is the number of long-polls waiting for a message.
	Parked int
	// Routes and Queued are the routes with messages and the messages
	// the store holds; valid only when Totals is true.
	Routes, Queued int
	Totals         bool
}

// Options are the settings of [New]; Roster and Counts are required.
type Options struct {
	// Version, if set, names the bus's version on the page.
	Version string
	// Now is the wall clock. Nil means [time.Now].
	Now func() time.Time
	// Roster is the roster whose sessions the page lists.
	Roster *roster.Roster
	// Private is set for a bus that requires signed requests: the page,
	// which is open to all, then shows what an unsigned /roster shows,
	// the public variants of discoverable sessions and nothing else.
	Private bool
	// Counts reads the bus's queue figures when the page is rendered.
	Counts func() Counts
}

// Page is the status page of one bus. Make it with [New]; it is safe for
// concurrent use.
type Page struct {
	// Fixed at creation.
	version string
	now     func() time.Time
	started time.Time // for the uptime
	roster  *roster.Roster
	private bool
	counts  func() Counts

	rates rates                        // atomic
	last  atomic.Pointer[renderedPage] // the page last rendered

	mu    sync.Mutex
	views map[*roster.Entry]*statusSession // guarded by mu; see view
}

// New returns the page of a bus that starts now.
func New(opts Options) *Page {
	p := &Page{
		version: opts.Version,
		now:     opts.Now,
		roster:  opts.Roster,
		private: opts.Private,
		counts:  opts.Counts,
	}
	if p.now == nil {
		p.now = time.Now
	}
	p.started = p.now()
	return p
}

// Stored counts a message stored at ms (Unix ms) for the chart.
func (p *Page) Stored(ms int64) { p.rates.addStored(ms) }

// Delivered counts a message handed out at ms (Unix ms) for the chart.
func (p *Page) Delivered(ms int64) { p.rates.addDelivered(ms) }

// Serve answers a GET or HEAD request with the page: rendered on the
// server, reloading itself, showing the sessions of the roster, the queue
// figures and the message rates of the last ten minutes, and no more about
// sessions than /roster tells the same clients. It returns an error, and
// writes nothing, only when the page does not render.
//
// What it costs does not grow with the roster beyond the sessions it
// lists: each roster entry is read for the page once, the first time the
// page lists it ([Page.view]), and a rendered page is served again for
// [PageAge].
func (p *Page) Serve(w http.ResponseWriter, r *http.Request) error {
	now := p.now()
	page := p.last.Load()
	// A page from the future (the wall clock went back) is stale too.
	if page == nil || now.Before(page.at) || now.Sub(page.at) >= PageAge {
		body, err := p.render(now)
		if err != nil {
			return err
		}
		page = &renderedPage{at: now, body: body}
		p.last.Store(page)
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Length", strconv.Itoa(len(page.body)))
	h.Set("Cache-Control", "no-store")
	// The page runs no script and loads nothing from elsewhere.
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; img-src data:")
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(page.body)
	}
	return nil
}

// render renders the page as it is at now.
func (p *Page) render(now time.Time) ([]byte, error) {
	ms := max(now.UnixMilli(), 0)
	c := p.counts()
	d := statusData{
		Version: p.version,
		Uptime:  ago(now.Sub(p.started)),
		Refresh: int(statusRefresh.Seconds()),
		Parked:  c.Parked,
		Totals:  c.Totals,
		Routes:  c.Routes,
		Queued:  c.Queued,
		Chart:   newChart(p.rates.series(ms)),
	}
	// The entries not expired, with their ages, the most recently seen
	// first, which puts the live ones first. Only those listed are read.
	type aged struct {
		e *roster.Entry
		a time.Duration
	}
	snap := p.roster.Snapshot()
	list := make([]aged, 0, snap.Len())
	for e := range snap.All() {
		// A bus that requires signatures shows the page, which is open
		// to all, what it shows an unsigned /roster: public variants.
		if p.private && e.Public() == nil {
			continue
		}
		if a := e.Age(ms); a < roster.Retention {
			list = append(list, aged{e, a})
			if a < statusLive {
				d.Live++
			}
		}
	}
	slices.SortStableFunc(list, func(a, b aged) int { return cmp.Compare(a.a, b.a) })
	if len(list) > statusSessionLimit {
		d.Omitted = len(list) - statusSessionLimit
		list = list[:statusSessionLimit]
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	views := make(map[*roster.Entry]*statusSession, len(list))
	d.Sessions = make([]statusSession, len(list))
	for i, x := range list {
		v := p.view(x.e)
		views[x.e] = v
		ss := *v
		ss.Age = x.a
		ss.Live = x.a < statusLive
		d.Sessions[i] = ss
	}
	p.views = views
	var buf bytes.Buffer
	if err := statusPage.Execute(&buf, d); err != nil {
		return nil, fmt.Errorf("status page: %v", err)
	}
	return buf.Bytes(), nil
}

// view returns the fields of e's announcement as the page shows them,
// without its age. They are read and cleaned the first time the page
// lists e, then kept while the page lists it: an entry never changes, a
// refresh makes a new one. p.mu must be held.
//
// On a bus that requires signatures (which never changes its mode) the
// view is of the entry's public variant, which must exist.
func (p *Page) view(e *roster.Entry) *statusSession {
	if v := p.views[e]; v != nil {
		return v
	}
	fields := e.Fields()
	if p.private {
		fields = e.Public()
	}
	v := statusEntry(fields)
	return &v
}

// statusEntry reads the fields of one stored announcement for the page.
// Fields that are missing or of another type show as empty.
func statusEntry(fields []byte) statusSession {
	ann := wire.ViewAnnounce(fields)
	key := untrusted.Clean(ann.PubKey)
	fp := key
	if n := 8; len(fp) > n {
		fp = fp[:n]
	}
	return statusSession{
		Name:        untrusted.Name(ann.Name),
		Fingerprint: untrusted.Label(fp),
		Session:     untrusted.Label(ann.SessionID),
		Summary:     untrusted.Summary(ann.Summary),
	}
}

// ago renders a duration the way discover does: seconds below 90 s,
// minutes below 90 min, hours below 48 h, then days.
func ago(d time.Duration) string {
	switch {
	case d < 90*time.Second:
		return strconv.Itoa(int(d/time.Second)) + "s"
	case d < 90*time.Minute:
		return strconv.Itoa(int(d/time.Minute)) + "m"
	case d < 48*time.Hour:
		return strconv.Itoa(int(d/time.Hour)) + "h"
	}
	return strconv.Itoa(int(d/(24*time.Hour))) + " days"
}

// chart is the inline SVG bar chart of the rates: one pair of bars per
// step, stored messages and delivered ones, scaled to the largest count.
type chart struct {
	Width, Height int
	Bars          []chartBar
	Max           int64
	Stored        int64 // over the whole chart
	Delivered     int64
	From, To      string
}

// chartBar is one bar of the chart, in SVG user units.
type chartBar struct {
	X, Y, W, H int
	Delivered  bool
	Title      string
}

// Chart geometry, in SVG user units.
const (
	chartBarW   = 6
	chartHeight = 120
)

func newChart(points []ratePoint) chart {
	c := chart{Width: len(points) * (2*chartBarW + 2), Height: chartHeight}
	for _, p := range points {
		c.Max = max(c.Max, p.Stored, p.Delivered)
		c.Stored += p.Stored
		c.Delivered += p.Delivered
	}
	if len(points) > 0 {
		c.From = points[0].Start.UTC().Format("15:04:05")
		c.To = points[len(points)-1].Start.Add(rateStep).UTC().Format("15:04:05")
	}
	scale := max(c.Max, 1)
	for i, p := range points {
		x := i * (2*chartBarW + 2)
		at := p.Start.UTC().Format("15:04:05")
		for j, v := range []int64{p.Stored, p.Delivered} {
			if v == 0 {
				continue
			}
			h := max(int(v*chartHeight/scale), 1)
			kind := "stored"
			if j == 1 {
				kind = "delivered"
			}
			c.Bars = append(c.Bars, chartBar{X: x + j*chartBarW, Y: chartHeight - h, W: chartBarW - 1, H: h,
				Delivered: j == 1, Title: fmt.Sprintf("%s: %d %s", at, v, kind)})
		}
	}
	return c
}
