package bus

import (
	"bytes"
	"cmp"
	_ "embed"
	"fmt"
	"html/template"
	"net/http"
	"slices"
	"strconv"
	"time"

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
// holds up to [RosterCap], which no one reads on a page.
const statusSessionLimit = 500

//go:embed status.html
var statusHTML string

// statusPage is the template of GET /. html/template escapes every value
// by its context, so a roster name can be anything and still only ever
// be text.
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

// statusPageAge is how long a rendered status page is served again before
// the next request renders it anew. People read the page, which reloads
// itself every [statusRefresh]; a second's delay is nothing to them, and
// however often clients ask, the bus renders it at most about once a
// second.
const statusPageAge = time.Second

// renderedPage is a status page and the wall-clock time it was rendered.
type renderedPage struct {
	at   time.Time
	body []byte
}

// status serves GET /: a page for people, rendered on the server, that
// reloads itself. It shows the sessions of the roster, the queue totals
// and the message rates of the last ten minutes: no more about sessions
// than /roster tells the same clients.
//
// What it costs does not grow with the roster beyond the sessions it
// lists: each roster entry is read for the page once, the first time the
// page lists it ([statusView]), and a rendered page is served again for
// [statusPageAge].
func (s *Server) status(w http.ResponseWriter, r *http.Request) error {
	now := s.now()
	page := s.page.Load()
	// A page from the future (the wall clock went back) is stale too.
	if page == nil || now.Before(page.at) || now.Sub(page.at) >= statusPageAge {
		body, err := s.renderStatus(now)
		if err != nil {
			return err
		}
		page = &renderedPage{at: now, body: body}
		s.page.Store(page)
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

// renderStatus renders the status page as it is at now.
func (s *Server) renderStatus(now time.Time) ([]byte, error) {
	ms := max(now.UnixMilli(), 0)
	st := s.Stats()
	d := statusData{
		Version: s.version,
		Uptime:  ago(now.Sub(s.started)),
		Refresh: int(statusRefresh.Seconds()),
		Parked:  st.Parked,
		Totals:  st.Totals,
		Routes:  st.Routes,
		Queued:  st.Queued,
		Chart:   newChart(s.rates.series(ms)),
	}
	// The entries not expired, with their ages, the most recently seen
	// first, which puts the live ones first. Only those listed are read.
	type aged struct {
		e *rosterEntry
		a int64
	}
	live := func(x aged) bool { return time.Duration(x.a)*time.Millisecond < statusLive }
	items := s.roster.snapshot().items
	list := make([]aged, 0, len(items))
	private := s.guard.mode == AuthRequired
	for _, it := range items {
		// A bus that requires signatures shows the page, which is open
		// to all, what it shows an unsigned /roster: public variants.
		if private && privacyOf(it.entry).public == nil {
			continue
		}
		if a := age(it.at, ms); a < rosterRetainMs {
			list = append(list, aged{it.entry, a})
			if live(list[len(list)-1]) {
				d.Live++
			}
		}
	}
	slices.SortStableFunc(list, func(a, b aged) int { return cmp.Compare(a.a, b.a) })
	if len(list) > statusSessionLimit {
		d.Omitted = len(list) - statusSessionLimit
		list = list[:statusSessionLimit]
	}
	d.Sessions = make([]statusSession, len(list))
	for i, x := range list {
		ss := *statusView(x.e, private)
		ss.Age = time.Duration(x.a) * time.Millisecond
		ss.Live = live(x)
		d.Sessions[i] = ss
	}
	var buf bytes.Buffer
	if err := statusPage.Execute(&buf, d); err != nil {
		return nil, fmt.Errorf("%w: status page: %v", errStorage, err)
	}
	return buf.Bytes(), nil
}

// statusView returns the fields of e's announcement as the page shows
// them, without its age. They are read and cleaned the first time the page
// lists e, then kept with it: an entry never changes, a refresh makes a
// new one.
//
// With public set (a bus that requires signatures, which never changes
// its mode) the view is of the entry's public variant, which must exist.
func statusView(e *rosterEntry, public bool) *statusSession {
	if v := e.view.Load(); v != nil {
		return v
	}
	fields := e.fields
	if public {
		fields = privacyOf(e).public
	}
	v := statusEntry(fields)
	e.view.CompareAndSwap(nil, &v)
	return e.view.Load()
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
