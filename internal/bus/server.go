package bus

import (
	"crypto/tls"
	"errors"
	"log"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/interlink-go/interlink/internal/reqsign"
	"github.com/interlink-go/interlink/internal/roster"
	"github.com/interlink-go/interlink/internal/statuspage"
	"github.com/interlink-go/interlink/internal/store"
	"github.com/interlink-go/interlink/internal/wire"
)

// Limits and defaults of the bus beyond those of its wire format (package
// wire: the body, announcement and route limits).
const (
	// DefaultRecvTimeout is how long /recv waits when timeout_ms is absent
	// ([wire.DefaultRecvWait]).
	DefaultRecvTimeout = wire.DefaultRecvWait
	// MaxRecvTimeout is the longest /recv wait; larger timeout_ms values
	// are clamped to it.
	MaxRecvTimeout = 120 * time.Second
	// RosterCap is the most entries the roster holds ([roster.Cap]).
	RosterCap = roster.Cap
	// MaxRosterBytes bounds a whole /roster response, ages included
	// ([roster.MaxBytes]).
	MaxRosterBytes = roster.MaxBytes
	// RosterRetention is how long a roster entry lives after its last
	// announcement ([roster.Retention]).
	RosterRetention = roster.Retention
)

// Options holds the optional settings of [New]. A nil *Options, and every
// zero field, means the default.
type Options struct {
	// Logger receives warnings about dropped messages and errors from the
	// store. Nil discards them.
	Logger *slog.Logger
	// Now is the wall clock used for envelope stamps, roster ages and the
	// drop-warning rate limit. Nil means [time.Now].
	Now func() time.Time
	// MaxRecvTimeout caps the wait of /recv. Zero means [MaxRecvTimeout].
	// It also caps the default wait, so a small value shortens every poll.
	MaxRecvTimeout time.Duration
	// Version, if set, is sent in the [wire.VersionHeader] of /healthz answers,
	// so that a diagnosis can tell which bus it reached.
	Version string
	// HeaderTimeout bounds the time a request's headers take to arrive.
	// Zero means [HeaderTimeout]. [NewHTTPServer] and [Listen] use it.
	HeaderTimeout time.Duration
	// RequestTimeout bounds the time a whole request takes to arrive;
	// its answer has [AnswerTimeout] more. Zero means
	// [DefaultRequestTimeout]. [NewHTTPServer] sets it as the server's
	// deadlines; the bus moves them for long-polls.
	RequestTimeout time.Duration
	// MaxConns is how many connections a listener from [Listen] keeps
	// open at once. Zero means what the process's open-file limit
	// allows ([connlimit.FileCapacity]).
	MaxConns int
	// Conns, if set, receives the counts of a listener from [Listen].
	Conns *ConnStats
	// RosterLog, if set, keeps the roster in a log shared with other
	// buses instead of in this bus alone; see [roster.Log].
	RosterLog roster.Log
	// Auth is what the bus does with request signatures; the zero value
	// is [AuthOptional].
	Auth Auth
	// Verifier checks request signatures and remembers their nonces,
	// unless Auth is [AuthOff]. Nil means one with reqsign's defaults;
	// give one made with the names and path prefixes of a reverse proxy
	// in front of the bus ([reqsign.Options]).
	Verifier *reqsign.Verifier
	// Limits are the rates of the per-key and per-address limits, which
	// apply unless Auth is [AuthOff]. Nil means keylimit's presets.
	Limits *Limits
	// TLS, if set, makes [Serve] serve HTTPS with it (see [Listen]).
	TLS *tls.Config
	// ErrorLog, if set, receives the HTTP server's own errors (a failed
	// accept, a broken connection). Nil sends them to Logger as
	// warnings. [NewHTTPServer] uses it.
	ErrorLog *log.Logger
}

// Server is the bus's HTTP handler. Create it with [New]; it is safe for
// concurrent use.
type Server struct {
	// Fixed at creation.
	st      store.Store
	log     *slog.Logger
	now     func() time.Time
	maxWait time.Duration
	version string
	// requestTimeout is the deadline NewHTTPServer sets for a whole
	// request, which long-polls extend.
	requestTimeout time.Duration
	done           chan struct{} // closed by Shutdown
	stop           sync.Once

	// Message totals, atomic.
	counters counters

	// Each of these guards its own state.
	waiters waiters
	drops   dropLog
	fullLog refusalLog
	roster  roster.Roster
	page    *statuspage.Page // GET /, which also counts the rates it charts

	// limiter is st when it limits its values, else nil; fixed at
	// creation. maxBodyHeader caches the header value of MaxBody.
	limiter       store.ValueLimiter
	maxBodyHeader atomic.Pointer[maxBodyValue]

	// guard checks signatures and limits; fixed at creation.
	guard *guard

	// Set at creation, for stores shared with other buses; nil
	// otherwise. See shared.go.
	unwatch func()         // stops the store's watch
	shared  *roster.Shared // the roster's shared log
}

// New returns a Server that keeps its queues in st. The caller still owns
// st and closes it after the HTTP server has stopped.
//
// When st is a [store.Watcher], which other buses may write to, the Server
// watches it until Shutdown, so that messages other buses store wake its
// long-polls as its own sends do. When st is a [store.Health], /healthz
// follows its health.
func New(st store.Store, opts *Options) *Server {
	if opts == nil {
		opts = &Options{}
	}
	s := &Server{
		st:             st,
		log:            opts.Logger,
		now:            opts.Now,
		maxWait:        opts.MaxRecvTimeout,
		version:        opts.Version,
		requestTimeout: opts.requestTimeout(),
		done:           make(chan struct{}),
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.maxWait <= 0 {
		s.maxWait = MaxRecvTimeout
	}
	s.guard = newGuard(opts, s.now)
	s.limiter, _ = st.(store.ValueLimiter)
	s.page = statuspage.New(statuspage.Options{
		Version: s.version,
		Now:     s.now,
		Roster:  &s.roster,
		Private: s.guard.mode == AuthRequired,
		Counts: func() statuspage.Counts {
			n := s.Stats()
			return statuspage.Counts{Parked: n.Parked, Routes: n.Routes, Queued: n.Queued, Totals: n.Totals}
		},
	})
	if w, ok := st.(store.Watcher); ok {
		// A message another bus stored wakes this bus's polls on its
		// route; when hints may have been lost, every poll looks again.
		s.unwatch = w.Watch(s.waiters.wake, s.waiters.wakeAll)
	}
	if opts.RosterLog != nil {
		s.shared = roster.Share(&s.roster, opts.RosterLog, s.log)
	}
	return s
}

// Shutdown ends every parked long-poll, which answers {"status":"timeout"},
// and makes later polls return after one look at the queue. Call it when the
// HTTP server starts shutting down (for example through
// [http.Server.RegisterOnShutdown]): that server waits for active requests,
// and a parked poll would otherwise hold it for up to [MaxRecvTimeout].
// Shutdown also stops watching a shared store and roster, but does not
// close the store. It is safe to call more than once.
func (s *Server) Shutdown() {
	s.stop.Do(func() {
		close(s.done)
		if s.unwatch != nil {
			s.unwatch()
		}
		if s.shared != nil {
			s.shared.Stop()
		}
	})
}

// endpoint is one route of the table in the package comment.
type endpoint struct {
	get    bool // GET and HEAD; otherwise POST
	handle func(*Server, http.ResponseWriter, *http.Request) error
}

// endpoints maps each path the bus serves to its handler.
var endpoints = map[string]endpoint{
	"/send":       {handle: (*Server).send},
	"/recv":       {get: true, handle: (*Server).recv},
	"/ack":        {handle: (*Server).ack},
	"/announce":   {handle: (*Server).announce},
	"/unregister": {handle: (*Server).unregister},
	"/roster":     {get: true, handle: (*Server).listRoster},
	"/healthz":    {get: true, handle: (*Server).healthz},
	"/":           {get: true, handle: func(s *Server, w http.ResponseWriter, r *http.Request) error { return s.page.Serve(w, r) }},
}

// ServeHTTP routes a request to its endpoint.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if RefuseManyHeaderFields(w, r) {
		return
	}
	s.setMaxBody(w)
	ep, ok := endpoints[r.URL.Path]
	if !ok {
		fail(w, errNotFound)
		return
	}
	switch {
	case ep.get && r.Method != http.MethodGet && r.Method != http.MethodHead:
		fail(w, &methodError{allow: "GET, HEAD"})
		return
	case !ep.get && r.Method != http.MethodPost:
		fail(w, &methodError{allow: "POST"})
		return
	}
	if err := ep.handle(s, w, r); err != nil {
		fail(w, err)
	}
}

// Errors the handlers return; fail turns each into its status.
var (
	// Routing.
	errNotFound = errors.New("not found")

	// Reading the request; decoding it gives the errors of package wire.
	errMediaType   = errors.New("content type must be application/json or application/*+json")
	errTooLarge    = errors.New("request body too large")
	errRead        = errors.New("reading request body")
	errBodyTimeout = errors.New("request body too slow")

	// Acting on it.
	errForeignAck = errors.New("ack key does not belong to me")
	errStorage    = errors.New("storage error")
	// errPoll marks a failed long-poll, which answers with the status
	// field clients look at.
	errPoll = errors.New("storage error")
	// errFull marks a send refused because the queues hold as many
	// bytes as the store's total bound allows; see [Server.refuse].
	errFull = errors.New("bus full")
)

// methodError reports a known path used with the wrong method; allow lists
// the methods the path takes.
type methodError struct{ allow string }

func (e *methodError) Error() string { return "method not allowed" }

// fail writes err as an error response. It is the only place where errors
// become status codes. Storage failures were logged with their detail by the
// handler; the client sees only that the store failed.
func fail(w http.ResponseWriter, err error) {
	status, msg, poll := http.StatusInternalServerError, err.Error(), false
	me, isMethod := errors.AsType[*methodError](err)
	_, isAuth := errors.AsType[*authError](err)
	le, isLimit := errors.AsType[*limitError](err)
	switch {
	case isAuth:
		status = http.StatusUnauthorized
		w.Header().Set(wire.AuthenticateHeader, wire.AuthScheme)
	case isLimit:
		status = http.StatusTooManyRequests
		w.Header().Set(wire.RetryAfterHeader, wire.RetryAfter(le.wait))
	case isMethod:
		status = http.StatusMethodNotAllowed
		w.Header().Set("Allow", me.allow)
	case errors.Is(err, errNotFound):
		status = http.StatusNotFound
	case errors.Is(err, errMediaType):
		status = http.StatusUnsupportedMediaType
	case errors.Is(err, errTooLarge):
		status = http.StatusRequestEntityTooLarge
	case errors.Is(err, errBodyTimeout):
		status = http.StatusRequestTimeout
	case errors.Is(err, wire.ErrShape):
		status = http.StatusUnprocessableEntity
	case errors.Is(err, errRead), errors.Is(err, wire.ErrSyntax), errors.Is(err, wire.ErrQuery),
		errors.Is(err, wire.ErrRoute), errors.Is(err, wire.ErrAnnounce):
		status = http.StatusBadRequest
	case errors.Is(err, errForeignAck):
		status = http.StatusForbidden
	case errors.Is(err, errFull):
		status = http.StatusInsufficientStorage
		w.Header().Set("Retry-After", retryFullAfter)
	case errors.Is(err, errPoll):
		msg, poll = errPoll.Error(), true
	case errors.Is(err, errUnavailable):
		status = http.StatusServiceUnavailable
		msg = errUnavailable.Error()
	default:
		msg = errStorage.Error()
	}
	writeJSON(w, status, wire.ErrorAnswer(msg, poll))
}

// retryFullAfter is the Retry-After of a 507 answer, in seconds: about
// when a client might try a full bus again. The original's clients retry
// every five seconds whatever the answer.
const retryFullAfter = "5"

// jsonType is the Content-Type header value of every JSON answer. The
// server only reads header values, so one slice serves every response.
var jsonType = []string{"application/json"}

// writeJSON writes a complete JSON response.
func writeJSON(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	// The keys are in canonical form already, so Set's canonicalization
	// is skipped.
	h["Content-Type"] = jsonType
	h["Content-Length"] = []string{strconv.Itoa(len(body))}
	w.WriteHeader(status)
	_, _ = w.Write(body) // a write error means the client left
}

// millis returns the current wall-clock time in Unix milliseconds; a clock
// before the epoch reads as 0.
func (s *Server) millis() int64 {
	return max(s.now().UnixMilli(), 0)
}

// healthz answers that the process is serving, or 503 while a store that
// can fail and recover ([store.Health]) is unavailable. It sends no request
// to the store.
func (s *Server) healthz(w http.ResponseWriter, _ *http.Request) error {
	if s.version != "" {
		w.Header().Set(wire.VersionHeader, s.version)
	}
	if err := s.storeHealth(); err != nil {
		s.log.Debug("unhealthy", "error", err)
		return err
	}
	writeJSON(w, http.StatusOK, []byte(wire.HealthyAnswer))
	return nil
}
