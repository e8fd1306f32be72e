// Package busmetrics exports a bus's metrics in the Prometheus text format
// at GET /metrics, in a registry of its own.
//
// It wraps the bus's handler: every other request goes on to the bus and
// is counted by endpoint and status code, with its duration. Message
// counts and sizes come from [bus.Server.Stats] when someone scrapes, so a
// bus nobody scrapes pays only for the request counting. Labels never hold
// a route, a key or a name, only the fixed endpoint names and status
// codes, so the number of series does not depend on what clients send.
//
// The package is apart from the bus so that only interlink-bus links the
// Prometheus client; the agent binary, which runs an in-memory bus for its
// demo, does not.
package busmetrics

import (
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/interlink-go/interlink/internal/bus"
	"github.com/interlink-go/interlink/internal/screen"
	"github.com/interlink-go/interlink/internal/wire"
)

// Path is where the metrics are served.
const Path = "/metrics"

// namespace prefixes every metric.
const namespace = "interlink_bus"

// durationBuckets cover a fast request (a fraction of a millisecond) up to
// the longest long-poll ([bus.MaxRecvTimeout]).
var durationBuckets = []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
	0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120}

// Metrics are the metrics of one bus. Create them with [New] before the
// store, so it can report its commits ([Metrics.ObserveCommit]), then wrap
// the bus with [Metrics.Handler].
type Metrics struct {
	reg       *prometheus.Registry
	serve     http.Handler
	next      http.Handler
	requests  *prometheus.CounterVec
	durations *prometheus.HistogramVec
	commits   prometheus.Histogram
	// byPath holds the per-request metrics of each served path, other
	// those of every other path. Both are set in New and only read
	// afterwards; a counter is made the first time its status code is
	// answered. So the request path neither hashes label values nor
	// allocates.
	byPath map[string]*endpoint
	other  *endpoint
}

// endpoint is the per-request metrics of one endpoint label.
type endpoint struct {
	label    string
	duration prometheus.Observer
	codes    [600]atomic.Pointer[prometheus.Counter] // by status code
}

// label returns the endpoint label of a served path: the path without its
// slash, or "status" for the status page at "/".
func label(path string) string {
	if path == "/" {
		return "status"
	}
	return strings.TrimPrefix(path, "/")
}

// New returns the metrics of a bus yet to be made, with the process and
// Go runtime collectors.
func New() *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry()}
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "requests_total",
		Help: "HTTP requests answered, by endpoint and status code.",
	}, []string{"endpoint", "code"})
	m.durations = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: namespace, Name: "request_duration_seconds",
		Help:    "Time from reading a request's headers to the end of its answer, by endpoint; /recv includes the long-poll wait.",
		Buckets: durationBuckets,
	}, []string{"endpoint"})
	m.commits = prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: namespace, Name: "db_commit_seconds",
		Help:    "Time from the start of a database write to its commit on disk, batching included; only a bus with --db has any.",
		Buckets: []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5},
	})
	m.reg.MustRegister(m.requests, m.durations, m.commits,
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		collectors.NewGoCollector())
	m.serve = promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
	return m
}

// Handler adds the counts and sizes of srv to the metrics and returns the
// handler to serve: it answers [Path] itself and passes every other
// request to srv, counting it. Call it once.
func (m *Metrics) Handler(srv *bus.Server) http.Handler {
	m.next = srv
	m.byPath = make(map[string]*endpoint)
	for _, p := range append(bus.Paths(), Path) {
		l := label(p)
		m.byPath[p] = &endpoint{label: l, duration: m.durations.WithLabelValues(l)}
	}
	// Unknown paths share one label: a path is whatever a client sends.
	m.other = &endpoint{label: "other", duration: m.durations.WithLabelValues("other")}
	m.reg.MustRegister(&statsCollector{srv: srv},
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: namespace, Name: "max_body_bytes",
			Help: "The largest /send body the bus accepts now; a larger one gets 413. 2 MiB unless the store takes less, as a NATS server with a smaller max_payload does.",
		}, func() float64 { return float64(srv.MaxBody()) }))
	return m
}

// Conns adds the counts of the bus's listener ([bus.Listen]) to the
// metrics: the connections open and the most that may be, those shed or
// refused when all were taken, and, where connections are screened
// ([screen.Enabled]; elsewhere those counts would read zero whatever
// happened), those waiting for their first headers and those dropped
// before them. Call it once.
func (m *Metrics) Conns(st *bus.ConnStats) {
	limit := st.Limit()
	m.reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: namespace, Name: "connections_open",
			Help: "Connections open, from their acceptance to their close.",
		}, func() float64 { return float64(limit.Open()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: namespace, Name: "connections_max",
			Help: "The most connections open at once, from the open-file limit: when all are taken, a client holding fewer takes the place of the oldest connection of the client holding most.",
		}, func() float64 { return float64(limit.Max()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Namespace: namespace, Name: "connections_shed_total",
			Help: "Connections closed, all being taken, to make room for a client holding fewer.",
		}, func() float64 { return float64(limit.Shed()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Namespace: namespace, Name: "connections_refused_total",
			Help: "New connections closed at once, all being taken, because their client held about as many as any other.",
		}, func() float64 { return float64(limit.Refused()) }),
	)
	if !screen.Enabled {
		return
	}
	screen := st.Screen()
	m.reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: namespace, Name: "connections_awaiting_headers",
			Help: "New connections open and waiting for their first request's headers to be complete.",
		}, func() float64 { return float64(screen.Waiting()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Namespace: namespace, Name: "connections_dropped_before_headers_total",
			Help: "New connections closed before their first request's headers were complete: at the header deadline, when the client hung up, when the headers were too large, or at shutdown.",
		}, func() float64 { return float64(screen.Dropped()) }),
	)
}

// Limits are the queue bounds a bus was started with, for [Metrics.Limits].
type Limits struct {
	// QueueCap is the most messages a route holds.
	QueueCap int
	// QueueBytes is the most bytes a route holds, and TotalBytes the most
	// all routes hold together, as the store counts them. Zero leaves a
	// bound out, for a store that does not apply it.
	QueueBytes, TotalBytes int64
}

// Limits adds the bus's queue bounds to the metrics as constant gauges,
// so that a dashboard can set interlink_bus_queued_bytes against them.
// Call it at most once.
func (m *Metrics) Limits(l Limits) {
	if l.QueueCap > 0 {
		m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: namespace, Name: "queue_cap_messages",
			Help: "The most messages one route's queue holds (--queue-cap); a full queue drops its oldest.",
		}, func() float64 { return float64(l.QueueCap) }))
	}
	for _, b := range []struct {
		name, help string
		v          int64
	}{
		{"queue_limit_bytes", "The most bytes one route's queue holds (--queue-bytes); a full queue drops its oldest.", l.QueueBytes},
		{"queued_limit_bytes", "The most bytes all queues hold together (--total-bytes); a send beyond it is refused with 507.", l.TotalBytes},
	} {
		if b.v > 0 {
			m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
				Namespace: namespace, Name: b.name, Help: b.help,
			}, func() float64 { return float64(b.v) }))
		}
	}
}

// ObserveCommit records one database write that took d to commit; give it
// to the store as [store.Options.ObserveCommit].
func (m *Metrics) ObserveCommit(d time.Duration) { m.commits.Observe(d.Seconds()) }

// ServeHTTP serves [Path] and passes every other request to the bus,
// counting it. Use it only after [Metrics.Handler].
func (m *Metrics) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	e, known := m.byPath[r.URL.Path]
	if !known {
		e = m.other
	}
	sw := writers.Get().(*statusWriter)
	sw.ResponseWriter, sw.code = w, 0
	if r.URL.Path == Path {
		m.serveMetrics(sw, r)
	} else {
		m.next.ServeHTTP(sw, r)
	}
	code := sw.code
	if code == 0 {
		code = http.StatusOK // nothing written is an empty 200
	}
	sw.ResponseWriter = nil
	writers.Put(sw)
	e.counter(m.requests, code).Inc()
	e.duration.Observe(time.Since(start).Seconds())
}

// serveMetrics serves GET and HEAD of [Path].
func (m *Metrics) serveMetrics(w http.ResponseWriter, r *http.Request) {
	if bus.RefuseManyHeaderFields(w, r) {
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusMethodNotAllowed)
		_, _ = w.Write(wire.ErrorAnswer("method not allowed", false))
		return
	}
	m.serve.ServeHTTP(w, r)
}

// counter returns the request counter of code, making it when first used.
func (e *endpoint) counter(vec *prometheus.CounterVec, code int) prometheus.Counter {
	if code < 0 || code >= len(e.codes) {
		code = 0
	}
	if c := e.codes[code].Load(); c != nil {
		return *c
	}
	c := vec.WithLabelValues(e.label, strconv.Itoa(code))
	e.codes[code].CompareAndSwap(nil, &c)
	return *e.codes[code].Load()
}

// statsCollector reports [bus.Server.Stats] when scraped.
type statsCollector struct{ srv *bus.Server }

func desc(name, help string) *prometheus.Desc {
	return prometheus.NewDesc(namespace+"_"+name, help, nil, nil)
}

var (
	storedDesc    = desc("messages_stored_total", "Messages accepted by /send and stored.")
	deliveredDesc = desc("messages_delivered_total", "Messages handed out by /recv; a message handed out twice counts twice.")
	ackedDesc     = desc("messages_acknowledged_total", "Acknowledgements /ack accepted.")
	droppedDesc   = desc("messages_dropped_total", "Messages dropped because their route's queue was full, by count or by bytes.")
	parkedDesc    = desc("longpolls_parked", "Long-polls of /recv waiting for a message.")
	rosterDesc    = desc("roster_entries", "Announcements on the roster, expired ones not yet pruned included.")
	routesDesc    = desc("routes", "Routes whose queue holds at least one message.")
	queuedDesc    = desc("messages_queued", "Messages stored in all queues together.")
)

// The byte bounds' metrics.
var (
	bytesDesc   = desc("queued_bytes", "Bytes all queues hold together, as the store counts them against --total-bytes.")
	refusedDesc = prometheus.NewDesc(namespace+"_sends_refused_total",
		"Sends refused by a byte bound: total_bytes when the queues held all the bus allows (507), route_bytes for a message larger than a route may hold (413).",
		[]string{"reason"}, nil)
)

// The refusals of request signatures and limits.
var (
	unauthorizedDesc = prometheus.NewDesc(namespace+"_requests_unauthorized_total",
		"Requests refused with 401 for their signature: unsigned where the bus requires signatures, malformed, stale, bad_signature, replay, wrong_key (signed by another key than the one they act for), announcement (an announcement whose own signature does not verify).",
		[]string{"reason"}, nil)
	limitedDesc = prometheus.NewDesc(namespace+"_requests_limited_total",
		"Requests refused with 429 and Retry-After: sends and roster_updates of one key over its rate, address for unsigned requests of one address over its rate, nonces for a key holding its whole share of the signature nonces.",
		[]string{"limit"}, nil)
)

func (c *statsCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{storedDesc, deliveredDesc, ackedDesc, droppedDesc, refusedDesc, parkedDesc, rosterDesc, routesDesc, queuedDesc, bytesDesc, unauthorizedDesc, limitedDesc} {
		ch <- d
	}
}

func (c *statsCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.srv.Stats()
	counter := func(d *prometheus.Desc, v uint64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v))
	}
	gauge := func(d *prometheus.Desc, v int) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v))
	}
	counter(storedDesc, st.Stored)
	counter(deliveredDesc, st.Delivered)
	counter(ackedDesc, st.Acknowledged)
	counter(droppedDesc, st.Dropped)
	ch <- prometheus.MustNewConstMetric(refusedDesc, prometheus.CounterValue, float64(st.RefusedFull), "total_bytes")
	ch <- prometheus.MustNewConstMetric(refusedDesc, prometheus.CounterValue, float64(st.RefusedTooLarge), "route_bytes")
	for i, reason := range bus.AuthReasons {
		ch <- prometheus.MustNewConstMetric(unauthorizedDesc, prometheus.CounterValue, float64(st.Unauthorized[i]), reason)
	}
	for i, limit := range bus.LimitNames {
		ch <- prometheus.MustNewConstMetric(limitedDesc, prometheus.CounterValue, float64(st.Limited[i]), limit)
	}
	gauge(parkedDesc, st.Parked)
	gauge(rosterDesc, st.RosterEntries)
	if st.Totals {
		gauge(routesDesc, st.Routes)
		gauge(queuedDesc, st.Queued)
		ch <- prometheus.MustNewConstMetric(bytesDesc, prometheus.GaugeValue, float64(st.QueuedBytes))
	}
}

// statusWriter records the status code of a response. It unwraps to the
// underlying writer, so [http.ResponseController] still reaches it.
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// writers recycles statusWriters: one per request otherwise.
var writers = sync.Pool{New: func() any { return new(statusWriter) }}
