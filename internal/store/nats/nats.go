package nats

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/interlink-go/interlink/internal/store"
)

// originHeader names the store that published a message: a random id per
// open [Store], so that its watches can tell its own messages from those of
// other processes. Beside it, Enqueue sends the sequence it expects last
// on the route (see [Store]), which the server keeps with the message.
// originHeaderBytes is the most the two headers add to a message.
const (
	originHeader      = "Interlink-Origin"
	originHeaderBytes = 128
)

// DefaultTimeout bounds each request [Store] makes to the server unless
// [Options.Timeout] says otherwise.
const DefaultTimeout = 5 * time.Second

// jsErrCodeSubjectOverlap is the JetStream error code for a stream whose
// subjects overlap an existing stream's.
const jsErrCodeSubjectOverlap jetstream.ErrorCode = 10065

// Options holds the settings of [Open]. A nil *Options, like its
// zero value, means defaults.
type Options struct {
	// Options holds the cap, the byte bounds, the clock and the logger.
	// The cap becomes the stream's max_msgs_per_subject and TotalBytes its
	// max_bytes; RouteBytes bounds only a single entry (see [Store]).
	store.Options
	// Stream names the stream; empty means [DefaultStream]. 1 to 64 ASCII
	// letters, digits, '-' and '_'.
	Stream string
	// Replicas is how many servers of a JetStream cluster keep the stream;
	// zero means 1. At most 5, and at most the cluster's size.
	Replicas int
	// Timeout bounds connecting and each request to the server; zero or
	// less means [DefaultTimeout].
	Timeout time.Duration
	// MinValue, when above zero, is the smallest limit on values the
	// caller can work with. Open fails with [store.ErrPayloadLimit] when
	// the server's max_payload leaves less. Otherwise the store takes
	// values up to [Store.MaxValue], whatever the caller would like.
	MinValue int
	// LongestValue, when above zero, is the longest value the caller
	// will enqueue; zero means as long as the server takes. An existing
	// stream whose max_bytes is below the store's total is taken as it is
	// only when it holds a value this long (see [Open]).
	LongestValue int
	// Connect holds further connection options, such as
	// nats.UserCredentials for a credentials file. They apply after the
	// store's own, so they may override them. A user and password may
	// also be given in the URL.
	Connect []nats.Option
}

func (o *Options) base() *store.Options {
	if o == nil {
		return nil
	}
	return &o.Options
}

func (o *Options) stream() string {
	if o == nil || o.Stream == "" {
		return DefaultStream
	}
	return o.Stream
}

func (o *Options) replicas() int {
	if o == nil || o.Replicas == 0 {
		return 1
	}
	return o.Replicas
}

func (o *Options) timeout() time.Duration {
	if o == nil || o.Timeout <= 0 {
		return DefaultTimeout
	}
	return o.Timeout
}

// Store is a [store.Store] kept in one NATS JetStream stream, so that several
// processes can serve the same queues and a JetStream cluster can keep
// copies of them on several machines.
//
// Each route's queue is the messages of one subject (see [Subject]).
// The stream keeps at most the cap of messages per subject and discards the
// oldest of a full subject when a new one arrives, so the server enforces
// the cap in the same step that stores the message. JetStream sequences are
// per stream and only grow, so they serve as the sequence of the store's
// keys, and messages of one subject come back in the order they were
// stored. When [Open] creates the stream, it starts the sequence at the
// current time in Unix nanoseconds, as [Memory] does: a key handed out by a
// stream that was deleted and made again names a sequence below every key
// of the new stream, so acking it cannot delete a newer message.
//
// Enqueue returns once the server has acknowledged the publish: the message
// is stored as durably as the stream is configured. The stream is kept in
// files; with replicas, a majority of the servers hold the message before
// the acknowledgement. A server writes its files without an fsync per
// message unless it runs with sync_interval set to always, so a power loss
// of a single server's machine can lose the newest acknowledged messages;
// a crash of the server process alone does not. An Enqueue that fails with
// a time out may still have stored its message, which is then delivered
// like any other; the bus delivers at least once in any case.
//
// Peek and Delete read from the stream leader, never from a replica that
// may lag, so a message stored through one process is seen by the next Peek
// of any other. A stream of one replica allows direct gets, which the
// stream answers itself; a stream of several is read through the
// JetStream API, which its leader answers.
//
// Bytes. The stream's max_bytes is the total byte bound, and its discard
// policy is "new": the server refuses a publish that would take the
// stream past it, whichever process sends it, and Enqueue returns a
// [*store.BoundError] wrapping [store.ErrFull]. The server counts a message's subject,
// headers and data and a few bytes of its own, not [store.EntrySize]. JetStream
// has no byte limit per subject, so one route may fill the whole stream: a
// route's queue is bounded only by the cap and the largest message, and
// [Options.RouteBytes] only refuses a single entry larger than itself. In
// a cluster the leader counts the messages being replicated too, and
// refuses a publish that would go over even when the per-subject cap
// would make room by discarding an older one.
//
// The dropped count. The server does not report what a publish
// discarded. A store remembers, for the routes it sent to recently, the
// sequence last on the route and at most how many messages the route
// holds, and publishes on the condition that this sequence is still the
// last (JetStream's expected last subject sequence; a route it does not
// know it takes to be empty). While that bound leaves room under the cap
// nothing can be dropped, and a send is one request. When another
// process sent to the route since, the server refuses the publish and
// says what is last now; Enqueue counts the route and publishes on the new
// condition. When the bound reaches the cap, Enqueue counts the route
// before it publishes. Enqueue and Delete take turns per route within one
// process. A report of no drop is exact; a report of a drop is exact with
// one writing process, and with several it may count a message that
// another process deleted between the count and the publish. After three
// refusals in a row Enqueue counts and publishes without a condition, as
// a route that several processes send to at once needs, and the report is
// then off by the sends and deletes of other processes in between, in
// either direction; the stored queue is always exact, since the server
// applies the cap.
//
// While the connection is down, methods fail at once with an error
// wrapping [ErrUnreachable] instead of waiting for it; the connection is
// retried in the background without end.
type Store struct {
	// conn is the store's connection; Conn lends it to the packages that
	// keep records of their own beside the stream, such as the bus roster.
	conn   Conn
	stream jetstream.Stream // fixed at open; reads, counts and deletes
	cap    int              // fixed at open
	// routeBytes bounds a single entry; fixed at open.
	routeBytes int64
	// totalBytes is the stream's max_bytes as last seen: set at open
	// (see streamSetup.fit), read again when the server refuses a publish for
	// it, since another process on the stream may have lowered it.
	totalBytes atomic.Int64

	turns  routeTurns // has its own lock
	peeked seqRoutes  // has its own lock
	tails  routeTails // has its own lock
	origin string     // fixed at open; the Origin header of what Enqueue publishes
}

var (
	_ store.Store        = (*Store)(nil)
	_ store.Totaler      = (*Store)(nil)
	_ store.ValueLimiter = (*Store)(nil)
)

// Open connects to the NATS server at serverURL (nats://host:port, or a
// comma-separated list of servers of one cluster) and opens the stream,
// creating it if it does not exist. Its errors wrap [ErrUnreachable] when
// no server answers, [ErrNoJetStream] when JetStream is off,
// [store.ErrPayloadLimit] when the server's max_payload leaves less than
// [Options.MinValue], and are a [*StreamConfigError] when an existing
// stream does not fit.
//
// An existing stream that a store made is brought up to date where that
// loses nothing: a stream of an older store, which discarded old messages
// and had no max_bytes, gets discard "new" and the total as max_bytes, and
// a max_bytes above the total is lowered to it. A max_bytes below the
// total is kept and becomes the store's total ([Store.TotalBytes]), so of
// several processes on one stream the smallest total wins. Every other
// difference is refused, and the stream left as it was.
func Open(serverURL string, opts *Options) (*Store, error) {
	base := opts.base()
	name := opts.stream()
	if err := checkStreamName(name); err != nil {
		return nil, err
	}
	replicas := opts.replicas()
	if replicas < 1 || replicas > maxReplicas {
		return nil, store.Errorf(nil, "%d replicas: want 1 to %d", replicas, maxReplicas)
	}
	o := base.WithDefaults()
	s := &Store{
		conn:       Conn{name: name, timeout: opts.timeout(), log: o.Logger},
		cap:        o.Cap,
		origin:     rand.Text(),
		routeBytes: o.RouteBytes,
	}
	s.totalBytes.Store(o.TotalBytes)
	s.conn.bg.init()
	where := redact(serverURL)
	conn := []nats.Option{
		nats.Timeout(s.conn.timeout),
		nats.MaxReconnects(-1),
		// No buffer while reconnecting: a request then fails at once
		// rather than sit in a buffer and reach the server after its
		// caller gave up.
		nats.ReconnectBufSize(-1),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if !s.conn.closed.Load() {
				s.conn.log.Warn("NATS connection lost", "err", err)
			}
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) {
			s.conn.log.Info("NATS connection restored", "server", nc.ConnectedUrlRedacted())
			// Watches catch up with what they may have missed.
			s.conn.bg.reconnected()
		}),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			s.conn.log.Warn("NATS error", "err", err)
		}),
	}
	if opts != nil {
		conn = append(conn, opts.Connect...)
	}
	nc, err := nats.Connect(serverURL, conn...)
	if err != nil {
		s.conn.bg.end()
		if errors.Is(err, nats.ErrNoServers) || errors.Is(err, nats.ErrTimeout) || isNetError(err) {
			return nil, store.Errorf(ErrUnreachable, "%s at %s (%v): check the URL and that nats-server is running and reachable", reasonUnreachable, where, err)
		}
		return nil, store.Errorf(err, "connect to NATS at %s: %v", where, err)
	}
	s.conn.nc = nc
	if err := s.open(o.Now, replicas, opts); err != nil {
		// Closed, so that closing the connection is not logged as
		// lost.
		s.conn.closed.Store(true)
		s.conn.bg.end()
		nc.Close()
		return nil, err
	}
	s.conn.log.Debug("store opened", "nats", where, "stream", name, "replicas", replicas, "cap", s.cap)
	return s, nil
}

// open checks JetStream and the payload limit, and finds or creates the
// stream.
func (s *Store) open(now func() time.Time, replicas int, opts *Options) error {
	ctx, cancel := s.conn.Request()
	defer cancel()
	js, err := jetstream.New(s.conn.nc)
	if err != nil {
		return store.Errorf(err, "JetStream: %v", err)
	}
	if _, err := js.AccountInfo(ctx); err != nil {
		switch {
		case errors.Is(err, jetstream.ErrJetStreamNotEnabled):
			return store.Errorf(ErrNoJetStream, "%s on the server (%v): start nats-server with -js, or add a jetstream block to its configuration", reasonNoJetStream, err)
		case errors.Is(err, context.DeadlineExceeded):
			// A cluster without JetStream does not answer at all.
			return store.Errorf(ErrNoJetStream, "%s: no JetStream answer within %v: check that the servers run with JetStream (nats-server -js, or a jetstream block in each configuration)", reasonNoJetStream, s.conn.timeout)
		case errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount):
			return store.Errorf(ErrNoJetStream, "%s for this account (%v): enable JetStream for the account in the server's configuration, or connect as a user of an account that has it", reasonNoJetStream, err)
		}
		return store.Errorf(err, "JetStream account info: %v", err)
	}
	if opts != nil && opts.MinValue > 0 && s.MaxValue() < int64(opts.MinValue) {
		return store.Errorf(store.ErrPayloadLimit, "%s: the server's max_payload is %d bytes, which leaves %d for a value; the store needs at least %d: "+
			"set max_payload to %d or more in the nats-server configuration",
			reasonPayload, s.conn.nc.MaxPayload(), s.MaxValue(), opts.MinValue, MinPayload(opts.MinValue))
	}

	var first uint64
	if ns := now().UnixNano(); ns > 0 {
		first = uint64(ns)
	}
	longest := s.MaxValue()
	if opts != nil && opts.LongestValue > 0 {
		longest = min(longest, int64(opts.LongestValue))
	}
	setup := &streamSetup{conn: &s.conn, js: js, cap: s.cap, longest: longest,
		want: streamConfig(s.conn.name, s.cap, replicas, s.totalBytes.Load(), first)}
	stream, err := setup.find(ctx)
	if err != nil {
		return err
	}
	if stream, err = setup.fit(ctx, stream); err != nil {
		return err
	}
	s.totalBytes.Store(setup.total)
	s.conn.js, s.stream = js, stream
	s.conn.replicas = stream.CachedInfo().Config.Replicas
	return nil
}

// isNetError reports whether err comes from the network, such as a refused
// connection.
func isNetError(err error) bool {
	var ne interface{ Timeout() bool }
	return errors.As(err, &ne)
}

// redact returns serverURL with any password replaced, for messages and
// logs. A list of servers is redacted server by server; an entry that does
// not parse is replaced by a placeholder, since it may hold a password.
func redact(serverURL string) string {
	parts := strings.Split(serverURL, ",")
	for i, p := range parts {
		u, err := url.Parse(strings.TrimSpace(p))
		switch {
		case err != nil:
			parts[i] = "(unparsable URL)"
		case u.User != nil:
			parts[i] = u.Redacted()
		}
	}
	return strings.Join(parts, ",")
}

// Enqueue implements [Store.Enqueue]. The value is sent before Enqueue
// returns, so the caller may reuse its buffer.
func (s *Store) Enqueue(route string, value []byte) (key string, dropped int, err error) {
	if s.conn.closed.Load() {
		return "", 0, store.ErrClosed
	}
	if size := store.EntrySize(route, len(value)); size > s.routeBytes {
		return "", 0, &store.BoundError{Err: store.ErrTooLarge, Bound: s.routeBytes, Size: size}
	}
	if limit := s.MaxValue(); int64(len(value)) > limit {
		return "", 0, &store.BoundError{Err: store.ErrPayloadLimit, Bound: limit, Size: int64(len(value))}
	}
	subject := Subject(s.conn.name, route)
	defer s.turns.take(route)()
	ctx, cancel := s.conn.Request()
	defer cancel()
	msg := &nats.Msg{Subject: subject, Data: value, Header: nats.Header{originHeader: {s.origin}}}
	// What this store knows of the route: the last sequence on it and an
	// upper bound of its count. Unknown, the route is guessed empty, the
	// commonest case, and the publish below checks the guess.
	last, n, _ := s.tails.get(route)
	for range tailTries {
		if n >= s.cap {
			// The publish may drop one: count what is there.
			c, err := s.count(ctx, subject)
			if err != nil {
				s.tails.forget(route)
				return "", 0, s.conn.Wrap("enqueue", err)
			}
			n = c
		}
		msg.Header.Set(jetstream.ExpectedLastSubjSeqHeader, fixedSeq(last))
		ack, err := s.conn.js.PublishMsg(ctx, msg)
		if err == nil {
			s.tails.set(route, ack.Sequence, min(n+1, s.cap))
			return store.Key(route, ack.Sequence), max(0, n+1-s.cap), nil
		}
		if isNotReady(err) {
			break // a cluster's leader still stores an earlier one
		}
		actual, moved := wrongLast(err)
		if !moved {
			s.tails.forget(route)
			return "", 0, s.publishError(ctx, err, msg)
		}
		// Another process published to the route, or emptied it, since
		// this store last looked: the server said what is last now.
		last, n = actual, s.cap
		if actual == 0 {
			n = 0 // nothing is on the route
		}
	}
	// The route is busy with other processes' sends: count, then
	// publish without a condition.
	s.tails.forget(route)
	msg.Header.Del(jetstream.ExpectedLastSubjSeqHeader)
	before, err := s.count(ctx, subject)
	if err != nil {
		return "", 0, s.conn.Wrap("enqueue", err)
	}
	ack, err := s.conn.js.PublishMsg(ctx, msg)
	if err != nil {
		return "", 0, s.publishError(ctx, err, msg)
	}
	return store.Key(route, ack.Sequence), max(0, before+1-s.cap), nil
}

// fixedSeq writes seq in decimal with leading zeros to 19 digits, so
// that every message Enqueue stores has headers of one length, whatever
// the sequence it expected: a message the cap drops frees exactly the
// bytes of the one that replaces it, as a full stream needs. A stream's
// sequences start at the time of its creation in Unix nanoseconds, 19
// digits until the year 2286; the server reads leading zeros as such.
func fixedSeq(seq uint64) string {
	var b [20]byte
	s := strconv.AppendUint(b[:0], seq, 10)
	const width = 19
	if len(s) >= width {
		return string(s)
	}
	out := make([]byte, width)
	pad := width - len(s)
	for i := range pad {
		out[i] = '0'
	}
	copy(out[pad:], s)
	return string(out)
}

// tailTries bounds the conditional publishes of one Enqueue before it
// counts and publishes without a condition.
const tailTries = 3

// jsErrCodeWrongLast is the JetStream error code of a publish whose
// expected last sequence on its subject was not the last.
const jsErrCodeWrongLast jetstream.ErrorCode = 10071

// jsErrCodeNotReady is the JetStream error code of a conditional
// publish that a clustered stream's leader cannot check yet, because an
// earlier message to the subject is still being replicated.
const jsErrCodeNotReady jetstream.ErrorCode = 10163

func isNotReady(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode == jsErrCodeNotReady
}

// wrongLast reports whether err is the server's refusal of a conditional
// publish because another message is last on the subject, and that
// message's sequence (0 when the subject has none), which the server's
// description ends with.
func wrongLast(err error) (uint64, bool) {
	var apiErr *jetstream.APIError
	if !errors.As(err, &apiErr) || apiErr.ErrorCode != jsErrCodeWrongLast {
		return 0, false
	}
	d := apiErr.Description
	i := strings.LastIndexByte(d, ' ')
	seq, perr := strconv.ParseUint(d[i+1:], 10, 64)
	if perr != nil {
		return 0, false
	}
	return seq, true
}

// publishError turns the error of a refused or failed publish into
// Enqueue's.
func (s *Store) publishError(ctx context.Context, err error, msg *nats.Msg) error {
	if errors.Is(err, nats.ErrMaxPayload) {
		// The connection moved to a server with a lower max_payload
		// since the check in Enqueue.
		return &store.BoundError{Err: store.ErrPayloadLimit, Bound: s.MaxValue(), Size: int64(len(msg.Data))}
	}
	if isStreamFull(err) {
		return &store.BoundError{Err: store.ErrFull, Bound: s.refreshTotal(ctx), Size: int64(len(msg.Subject) + len(msg.Data))}
	}
	return s.conn.Wrap("enqueue", err)
}

// MaxValue returns the length of the largest value Enqueue takes now:
// what the max_payload of the server the store is connected to leaves
// once the store's header is added. It follows the connection: a store
// that reconnects to a server of its cluster with another max_payload
// takes what that server takes. A NATS server started without settings
// takes 1 MiB.
func (s *Store) MaxValue() int64 {
	return max(s.conn.nc.MaxPayload()-originHeaderBytes, 0)
}

// MaxPayload returns the max_payload of the server the store is
// connected to, or last was.
func (s *Store) MaxPayload() int64 { return s.conn.nc.MaxPayload() }

// MinPayload returns the max_payload a NATS server needs for a [Store]
// store to take values of value bytes.
func MinPayload(value int) int64 { return int64(value) + originHeaderBytes }

// TotalBytes returns the stream's max_bytes as the store last saw it: the
// total of [Options.TotalBytes] unless the stream keeps a lower one (see
// [Open]).
func (s *Store) TotalBytes() int64 { return s.totalBytes.Load() }

// refreshTotal reads the stream's max_bytes again after the server
// refused a publish for it, and returns it; on failure it returns the
// value last seen.
func (s *Store) refreshTotal(ctx context.Context) int64 {
	if info, err := s.stream.Info(ctx); err == nil && info.Config.MaxBytes > 0 {
		s.totalBytes.Store(info.Config.MaxBytes)
	}
	return s.totalBytes.Load()
}

// jsErrCodeStoreFailed is the JetStream error code of a publish the
// stream did not store; its description says why.
const jsErrCodeStoreFailed jetstream.ErrorCode = 10077

// isStreamFull reports whether err is the server's refusal of a publish
// that would take the stream past its max_bytes. JetStream gives every
// refused store one code, so the server's description ("maximum bytes
// exceeded") tells this one apart; the stream has no other byte limit
// that refuses (no max_msgs, no max_msg_size, no per-subject discard of
// new messages).
func isStreamFull(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode == jsErrCodeStoreFailed &&
		strings.Contains(apiErr.Description, "maximum bytes")
}

// count returns the number of messages stored under subject.
func (s *Store) count(ctx context.Context, subject string) (int, error) {
	info, err := s.stream.Info(ctx, jetstream.WithSubjectFilter(subject))
	if err != nil {
		return 0, err
	}
	return int(info.State.Subjects[subject]), nil
}

// Peek implements [Store.Peek]. It asks the stream leader for the first
// message of route's subject.
func (s *Store) Peek(route string) (store.Entry, bool, error) {
	if s.conn.closed.Load() {
		return store.Entry{}, false, store.ErrClosed
	}
	subject := Subject(s.conn.name, route)
	ctx, cancel := s.conn.Request()
	defer cancel()
	msg, err := s.stream.GetMsg(ctx, 0, jetstream.WithGetMsgSubject(subject))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return store.Entry{}, false, nil
	}
	if err != nil {
		return store.Entry{}, false, s.conn.Wrap("peek", err)
	}
	if msg.Subject != subject {
		return store.Entry{}, false, fmt.Errorf("store: peek: asked for the first message of %s, got one of %s", subject, msg.Subject)
	}
	s.peeked.add(msg.Sequence, route)
	return store.Entry{Key: store.Key(route, msg.Sequence), Value: msg.Data}, true, nil
}

// Delete implements [Store.Delete]. It deletes the message with the key's
// sequence only if that message is on the key's route: a key whose route
// part names another route deletes nothing. For a key that Peek handed out
// recently in this process the route is known; for any other key Delete
// first asks the server which subject the sequence is on.
func (s *Store) Delete(key string) error {
	if s.conn.closed.Load() {
		return store.ErrClosed
	}
	route, seq, ok := store.ParseKey(key)
	if !ok {
		return nil
	}
	subject := Subject(s.conn.name, route)
	defer s.turns.take(route)()
	ctx, cancel := s.conn.Request()
	defer cancel()
	if !s.peeked.is(seq, route) {
		found, err := s.has(ctx, subject, seq)
		if err != nil || !found {
			return s.conn.Wrap("delete", err)
		}
	}
	err := s.stream.DeleteMsg(ctx, seq)
	if err == nil {
		// Only a message this call removed lowers the route's count.
		s.tails.deleted(route, seq)
	}
	if errors.Is(err, jetstream.ErrMsgDeleteUnsuccessful) {
		// Most likely it was deleted already, here or in another
		// process, or the cap dropped it.
		if found, herr := s.has(ctx, subject, seq); herr == nil && !found {
			err = nil
		}
	}
	if err == nil {
		s.peeked.forget(seq)
	}
	return s.conn.Wrap("delete", err)
}

// has reports whether the message with sequence seq is stored under
// subject.
func (s *Store) has(ctx context.Context, subject string, seq uint64) (bool, error) {
	msg, err := s.stream.GetMsg(ctx, seq, jetstream.WithGetMsgSubject(subject))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return msg.Sequence == seq, nil
}

// Depth implements [Store.Depth]. It asks the server.
func (s *Store) Depth(route string) (int, error) {
	if s.conn.closed.Load() {
		return 0, store.ErrClosed
	}
	ctx, cancel := s.conn.Request()
	defer cancel()
	n, err := s.count(ctx, Subject(s.conn.name, route))
	if err != nil {
		return 0, s.conn.Wrap("depth", err)
	}
	return n, nil
}

// Server returns the URL of the server the store is connected to, without
// its password, or an empty string while it is not connected.
// Conn is the store's connection, for the packages that keep records of
// their own beside the queue stream.
func (s *Store) Conn() *Conn { return &s.conn }

func (s *Store) Server() string { return s.conn.nc.ConnectedUrlRedacted() }

// Close implements [Store.Close]: it ends every watch ([Store.Watch]) and
// closes the connection, which fails requests still waiting for an answer
// with [store.ErrClosed]. The stream and its messages stay on the server.
// Calling Close again returns [store.ErrClosed].
func (s *Store) Close() error {
	if s.conn.closed.Swap(true) {
		return store.ErrClosed
	}
	s.conn.bg.stop()
	s.conn.nc.Close()
	return nil
}

// Totals implements [store.Totaler] with one stream-info request.
func (s *Store) Totals() (store.Totals, error) {
	if s.conn.closed.Load() {
		return store.Totals{}, store.ErrClosed
	}
	ctx, cancel := s.conn.Request()
	defer cancel()
	info, err := s.stream.Info(ctx)
	if err != nil {
		return store.Totals{}, s.conn.Wrap("totals", err)
	}
	return store.Totals{Routes: int(info.State.NumSubjects), Entries: int(info.State.Msgs), Bytes: int64(info.State.Bytes)}, nil
}
