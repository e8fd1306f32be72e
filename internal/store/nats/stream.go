package nats

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/interlink-go/interlink/internal/store"
)

// Subjects. The stream named S keeps the queue of route R under the subject
//
//	interlink.S.r<R in unpadded base64url>
//
// Routes may hold any byte, including '.', '*', '>', white space and NUL,
// none of which a subject token may; base64url's alphabet (letters, digits,
// '-' and '_') is safe in a token, and the leading 'r' keeps the token of the
// empty route non-empty. Decoding is strict, so each route has exactly one
// subject and each subject at most one route. A route of 256 bytes makes a
// token of 343 characters.
const natsSubjectRoot = "interlink."

var routeEncoding = base64.RawURLEncoding.Strict()

// Subject returns the subject that carries route's queue in the stream
// named stream.
func Subject(stream, route string) string {
	var b strings.Builder
	b.Grow(len(natsSubjectRoot) + len(stream) + 2 + routeEncoding.EncodedLen(len(route)))
	b.WriteString(natsSubjectRoot)
	b.WriteString(stream)
	b.WriteString(".r")
	b.WriteString(routeEncoding.EncodeToString([]byte(route)))
	return b.String()
}

// Subjects returns the subject filter that matches the queue subject of
// every route in the stream named stream.
func Subjects(stream string) string {
	return natsSubjectRoot + stream + ".*"
}

// Route returns the route whose queue subject in the stream named stream
// is subject, and false when [Subject] makes no such subject.
func Route(stream, subject string) (string, bool) {
	token, ok := strings.CutPrefix(subject, natsSubjectRoot+stream+".r")
	// The decoder skips carriage returns and line feeds even when
	// strict, which would give one route a second subject.
	if !ok || strings.ContainsAny(token, "\r\n") {
		return "", false
	}
	route, err := routeEncoding.DecodeString(token)
	if err != nil {
		return "", false
	}
	return string(route), true
}

// DefaultStream is the stream name [Open] uses unless told otherwise.
const DefaultStream = "INTERLINK"

// maxStreamName is the longest stream name [Open] accepts.
const maxStreamName = 64

// CheckStreamName reports whether [Open] takes name as a stream name:
// 1 to 64 ASCII letters, digits, '-' and '_', a name that JetStream accepts
// and that is a valid subject token.
func CheckStreamName(name string) error { return checkStreamName(name) }

func checkStreamName(name string) error {
	if name == "" || len(name) > maxStreamName {
		return store.Errorf(nil, "stream name %q: want 1 to %d characters", name, maxStreamName)
	}
	for _, c := range []byte(name) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return store.Errorf(nil, "stream name %q: only letters, digits, - and _ are allowed", name)
		}
	}
	return nil
}

// maxReplicas is the most replicas JetStream keeps of a stream.
const maxReplicas = 5

// streamDescription is the description of every stream a [Store] store
// creates, since the first version; a stream that carries it is taken to
// be one a store made (see streamSetup.fit).
const streamDescription = "interlink bus queues, one subject per route"

// streamConfig returns the settings of the stream the store creates. first
// is its first sequence (see [Store]). The stream keeps at most capacity
// messages per subject, discarding the oldest of a subject, and at most
// totalBytes in all, refusing a message that would go over: a stream whose
// discard policy is new still applies the per-subject limit by discarding
// old messages unless discard_new_per_subject is set.
func streamConfig(name string, capacity, replicas int, totalBytes int64, first uint64) jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:              name,
		Description:       streamDescription,
		Subjects:          []string{Subjects(name)},
		Retention:         jetstream.LimitsPolicy,
		MaxConsumers:      -1,
		MaxMsgs:           -1,
		MaxBytes:          totalBytes,
		MaxAge:            0,
		MaxMsgsPerSubject: int64(capacity),
		MaxMsgSize:        -1,
		Discard:           jetstream.DiscardNew,
		Storage:           jetstream.FileStorage,
		Replicas:          replicas,
		FirstSeq:          first,
		// Reads of a stream on one server are direct gets, which the
		// stream answers itself rather than through the JetStream API;
		// with replicas, any of them would answer, so reads go to the
		// leader through the API instead.
		AllowDirect: replicas == 1,
	}
}

// ConfigMismatch is one setting of an existing stream that differs from
// what the store needs.
type ConfigMismatch struct {
	// Field is the setting's name in the stream's JSON configuration, as
	// `nats stream info --json` prints it.
	Field string
	// Have is the stream's value, Want the store's.
	Have, Want string
}

// StreamConfigError reports an existing stream whose settings the store
// cannot work with, or a stream that cannot be created because its subjects
// overlap another stream's. It wraps [ErrStreamConfig].
type StreamConfigError struct {
	// Stream is the stream's name.
	Stream string
	// Mismatches lists the differing settings in a fixed order; it is
	// empty when the subjects overlap another stream's.
	Mismatches []ConfigMismatch
	// Overlap is the server's description of the subject overlap, when
	// that is the problem.
	Overlap string
	// Hint, when set, replaces the advice at the end of the message,
	// which otherwise speaks of the queue stream.
	Hint string
}

func (e *StreamConfigError) Error() string { return "store: " + e.Reason() }

// AsStoreError returns e as the Err of a [*store.Error] with e's reason,
// which is how [Open] returns it.
func (e *StreamConfigError) AsStoreError() *store.Error {
	return &store.Error{Reason: e.Reason(), Err: e}
}

// Reason says what is wrong and what to do, as [store.Error.Reason] does.
func (e *StreamConfigError) Reason() string {
	if e.Overlap != "" {
		return fmt.Sprintf("cannot create stream %q: %s; its subjects %s overlap another stream's: "+
			"remove or change that stream, or use another stream name", e.Stream, e.Overlap, Subjects(e.Stream))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "stream %q exists with settings this store cannot use:", e.Stream)
	for i, m := range e.Mismatches {
		if i > 0 {
			b.WriteString(";")
		}
		fmt.Fprintf(&b, " %s is %s, want %s", m.Field, m.Have, m.Want)
	}
	if e.Hint != "" {
		b.WriteString("; " + e.Hint)
		return b.String()
	}
	fmt.Fprintf(&b, "; configure the store to match (queue cap = max_msgs_per_subject, total bytes = max_bytes, replicas = num_replicas), "+
		"use another stream name, or edit the stream (nats stream edit %s) or remove it (nats stream rm %s, "+
		"which loses its queued messages)", e.Stream, e.Stream)
	return b.String()
}

// Unwrap returns [ErrStreamConfig].
func (e *StreamConfigError) Unwrap() error { return ErrStreamConfig }

// mismatches collects the settings of a stream or bucket that differ from
// what they should be.
type mismatches []ConfigMismatch

// add records field when have and want, printed, differ.
func (ms *mismatches) add(field string, have, want any) {
	if h, w := fmt.Sprint(have), fmt.Sprint(want); h != w {
		*ms = append(*ms, ConfigMismatch{Field: field, Have: h, Want: w})
	}
}

// compareStreamConfig lists the settings of have that differ from want in
// ways that break the store's promises: messages kept until deleted or
// dropped by the per-route cap, a total byte bound that refuses rather
// than discards, FIFO per route, deletes allowed, reads from
// the stream leader, and a publish acknowledged only once stored. The
// name, description and first sequence do not matter.
func compareStreamConfig(have, want jetstream.StreamConfig) []ConfigMismatch {
	var ms mismatches
	add := ms.add
	subjects := func(s []string) string { return "[" + strings.Join(s, " ") + "]" }
	if !slices.Equal(have.Subjects, want.Subjects) {
		ms = append(ms, ConfigMismatch{Field: "subjects", Have: subjects(have.Subjects), Want: subjects(want.Subjects)})
	}
	add("retention", have.Retention, want.Retention)
	add("storage", have.Storage, want.Storage)
	add("num_replicas", have.Replicas, want.Replicas)
	add("max_msgs_per_subject", have.MaxMsgsPerSubject, want.MaxMsgsPerSubject)
	add("discard", have.Discard, want.Discard)
	add("discard_new_per_subject", have.DiscardNewPerSubject, want.DiscardNewPerSubject)
	add("max_msgs", limit(have.MaxMsgs), limit(want.MaxMsgs))
	add("max_bytes", limit(have.MaxBytes), limit(want.MaxBytes))
	add("max_age", age(have.MaxAge), age(want.MaxAge))
	add("max_msg_size", limit(int64(have.MaxMsgSize)), limit(int64(want.MaxMsgSize)))
	add("deny_delete", have.DenyDelete, want.DenyDelete)
	add("sealed", have.Sealed, want.Sealed)
	add("no_ack", have.NoAck, want.NoAck)
	add("allow_direct", have.AllowDirect, want.AllowDirect)
	add("mirror", have.Mirror != nil, want.Mirror != nil)
	add("persist_mode", persistMode(have.PersistMode), persistMode(want.PersistMode))
	return ms
}

// limit prints a JetStream limit, where zero and negative mean none.
func limit(n int64) string {
	if n <= 0 {
		return "unlimited"
	}
	return strconv.FormatInt(n, 10)
}

func age(d time.Duration) string {
	if d <= 0 {
		return "unlimited"
	}
	return d.String()
}

func persistMode(m jetstream.PersistModeType) string {
	if m == jetstream.AsyncPersistMode {
		return "async"
	}
	return "default"
}

// fitUpdates bounds how often streamSetup.fit updates a stream before it gives
// up: another process may change the stream between an update and the
// next look at it.
const fitUpdates = 3

// streamSetup finds or creates a store's stream and fits it to the
// store's settings: what [Open] does once it is connected. Its fields but
// total are fixed when it is made.
type streamSetup struct {
	conn    *Conn
	js      jetstream.JetStream
	want    jetstream.StreamConfig // the stream as this store makes it
	cap     int                    // the store's per-route cap
	longest int64                  // the longest value the store takes
	// total is the store's total byte bound once fit has run: want's
	// max_bytes, or the stream's own when it keeps a lower one.
	total int64
}

// find returns the store's stream, created from want when there is none.
// When another process creates it first, find takes theirs, which fit
// then checks.
func (p *streamSetup) find(ctx context.Context) (jetstream.Stream, error) {
	stream, err := p.js.Stream(ctx, p.conn.name)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		stream, err = p.js.CreateStream(ctx, p.want)
		var apiErr *jetstream.APIError
		switch {
		case errors.Is(err, jetstream.ErrStreamNameAlreadyInUse):
			// Another process created it first; use theirs if it fits.
			stream, err = p.js.Stream(ctx, p.conn.name)
		case errors.As(err, &apiErr) && apiErr.ErrorCode == jsErrCodeSubjectOverlap:
			return nil, (&StreamConfigError{Stream: p.conn.name, Overlap: apiErr.Description}).AsStoreError()
		case err == nil:
			p.conn.log.Info("stream created", "stream", p.conn.name, "replicas", p.want.Replicas, "cap", p.cap, "max_bytes", p.want.MaxBytes)
		}
	}
	if err != nil {
		return nil, store.Errorf(err, "open stream %q: %v", p.conn.name, err)
	}
	return stream, nil
}

// fit makes the existing stream fit the store, or reports why it
// cannot: the store changes a stream only where doing so loses no message
// and overrides no bound another process set; every other difference
// stops the open with a [*StreamConfigError] listing it, and the stream
// is left as it was.
//
// What it changes, in a stream a store made (its description is
// [streamDescription]):
//
//   - discard "old" becomes "new". Stores before the total byte bound
//     made streams that discard old messages; with "new", the stream
//     keeps every message it has and refuses a publish over max_bytes,
//     while the per-subject cap still discards the route's oldest.
//   - allow_direct false becomes true on a stream of one replica, so
//     that reads are direct gets (see [Store]). A stream a store did not
//     make is read through the JetStream API as it is.
//   - max_bytes above the store's total, or none, is lowered to it. With
//     discard "new" the server removes nothing when max_bytes goes down:
//     a stream that holds more refuses new messages until receivers have
//     acknowledged enough.
//
// A stream whose max_bytes is below the store's total keeps it, and the
// store takes it as its total ([Store.TotalBytes]): of several processes
// on one stream with different totals, the smallest wins, whichever
// started first, and no process ever raises what another set. Raising it
// is the operator's act (nats stream edit). A max_bytes too small to hold
// the longest value the store takes is not taken.
//
// Everything else that compareStreamConfig lists is refused as before:
// a different per-route cap (lowering it would drop queued messages),
// replica count, retention, storage, age or message limits, and any
// stream a store did not make.
func (p *streamSetup) fit(ctx context.Context, stream jetstream.Stream) (jetstream.Stream, error) {
	for range fitUpdates {
		have := stream.CachedInfo().Config
		plan := planFit(have, p.want, p.longest)
		if len(plan.refused) > 0 {
			return nil, (&StreamConfigError{Stream: p.conn.name, Mismatches: plan.refused}).AsStoreError()
		}
		p.total = plan.total
		if len(plan.changes) == 0 {
			if plan.total < p.want.MaxBytes {
				p.conn.log.Warn("the stream keeps a lower total than this bus's; it applies", "stream", p.conn.name,
					"max_bytes", plan.total, "total_bytes", p.want.MaxBytes)
			}
			return stream, nil
		}
		if _, err := p.js.UpdateStream(ctx, plan.config); err != nil {
			return nil, store.Errorf(err, "bring stream %q up to date (%s): %v", p.conn.name, changeList(plan.changes), err)
		}
		p.conn.log.Info("stream brought up to date", "stream", p.conn.name, "changed", changeList(plan.changes))
		// Look again: another process may have changed it meanwhile.
		var err error
		if stream, err = p.js.Stream(ctx, p.conn.name); err != nil {
			return nil, store.Errorf(err, "open stream %q: %v", p.conn.name, err)
		}
	}
	return nil, store.Errorf(nil, "stream %q still changes after %d updates: is another process editing it?", p.conn.name, fitUpdates)
}

// fitPlan is what streamSetup.fit does to a stream.
type fitPlan struct {
	config  jetstream.StreamConfig // the stream's settings after the changes
	changes []ConfigMismatch       // the settings changed, from Have to Want
	refused []ConfigMismatch       // the differences fit does not change
	total   int64                  // the store's total byte bound after the changes
}

// planFit decides how streamSetup.fit treats each difference between the
// stream's settings have and the store's want; longest is the longest
// value the store takes, which max_bytes must hold.
func planFit(have, want jetstream.StreamConfig, longest int64) fitPlan {
	p := fitPlan{config: have, total: want.MaxBytes}
	owned := have.Description == streamDescription
	for _, m := range compareStreamConfig(have, want) {
		switch {
		case owned && m.Field == "discard" && have.Discard == jetstream.DiscardOld:
			p.config.Discard = jetstream.DiscardNew
			p.changes = append(p.changes, m)
		case owned && m.Field == "max_bytes" && (have.MaxBytes <= 0 || have.MaxBytes > want.MaxBytes):
			p.config.MaxBytes = want.MaxBytes
			p.changes = append(p.changes, m)
		case owned && m.Field == "max_bytes" && have.MaxBytes >= longest:
			p.total = have.MaxBytes // the smaller one wins
		case m.Field == "allow_direct" && want.AllowDirect && owned:
			p.config.AllowDirect = true
			p.changes = append(p.changes, m)
		case m.Field == "allow_direct" && want.AllowDirect:
			// A stream on one server reads the same either way.
		case m.Field == "max_bytes" && owned:
			m.Want = fmt.Sprintf("%s (or at least %d, the longest message)", m.Want, longest)
			p.refused = append(p.refused, m)
		default:
			p.refused = append(p.refused, m)
		}
	}
	return p
}

// changeList writes changes as "field a -> b, ...".
func changeList(changes []ConfigMismatch) string {
	parts := make([]string, len(changes))
	for i, c := range changes {
		parts[i] = fmt.Sprintf("%s %s -> %s", c.Field, c.Have, c.Want)
	}
	return strings.Join(parts, ", ")
}
