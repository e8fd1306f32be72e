package bus

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/interlink-go/interlink/internal/untrusted"
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

// status serves GET /: a page for people, rendered on the server, that
// reloads itself. It shows the sessions of the roster, the queue totals
// and the message rates of the last ten minutes: no more about sessions
// than /roster tells the same clients.
func (s *Server) status(w http.ResponseWriter, r *http.Request) error {
	now := s.millis()
	st := s.Stats()
	d := statusData{
		Version: s.version,
		Uptime:  ago(s.now().Sub(s.started)),
		Refresh: int(statusRefresh.Seconds()),
		Parked:  st.Parked,
		Totals:  st.Totals,
		Routes:  st.Routes,
		Queued:  st.Queued,
		Chart:   newChart(s.rates.series(now)),
	}
	for _, it := range s.roster.snapshot().items {
		a := age(it.at, now)
		if a >= rosterRetainMs {
			continue
		}
		ss := statusEntry(it.fields, time.Duration(a)*time.Millisecond)
		if ss.Live {
			d.Live++
		}
		d.Sessions = append(d.Sessions, ss)
	}
	// Live sessions first, then the most recently seen.
	slices.SortStableFunc(d.Sessions, func(a, b statusSession) int {
		if a.Live != b.Live {
			if a.Live {
				return -1
			}
			return 1
		}
		return int(a.Age - b.Age)
	})
	if len(d.Sessions) > statusSessionLimit {
		d.Omitted = len(d.Sessions) - statusSessionLimit
		d.Sessions = d.Sessions[:statusSessionLimit]
	}
	var buf bytes.Buffer
	if err := statusPage.Execute(&buf, d); err != nil {
		return fmt.Errorf("%w: status page: %v", errStorage, err)
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Length", strconv.Itoa(buf.Len()))
	h.Set("Cache-Control", "no-store")
	// The page runs no script and loads nothing from elsewhere.
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; img-src data:")
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(buf.Bytes())
	}
	return nil
}

// statusEntry reads the fields of one stored announcement for the page.
// Fields that are missing or of another type show as empty.
func statusEntry(fields []byte, a time.Duration) statusSession {
	var ann struct {
		PubKey  any `json:"pubkey"`
		Name    any `json:"name"`
		Session struct {
			SessionID any `json:"session_id"`
			Summary   any `json:"summary"`
		} `json:"session"`
	}
	obj := make([]byte, 0, len(fields)+2)
	obj = append(append(append(obj, '{'), fields...), '}')
	_ = json.Unmarshal(obj, &ann) // the bus stored a JSON object; a field of the wrong type stays empty
	str := func(v any) string {
		s, _ := v.(string)
		return s
	}
	key := untrusted.Clean(str(ann.PubKey))
	fp := key
	if n := 8; len(fp) > n {
		fp = fp[:n]
	}
	return statusSession{
		Name:        untrusted.Name(str(ann.Name)),
		Fingerprint: untrusted.Label(fp),
		Session:     untrusted.Label(str(ann.Session.SessionID)),
		Summary:     untrusted.Summary(str(ann.Session.Summary)),
		Live:        a < statusLive,
		Age:         a,
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
