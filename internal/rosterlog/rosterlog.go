// Package rosterlog keeps the records of the bus's shared roster in a
// NATS JetStream key-value bucket beside the queue stream of a
// [nats.Store], so that every bus process on the stream sees the same
// roster in the same order. It knows nothing of what a record means: the
// bus's roster (package roster) writes and reads them.
package rosterlog

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/interlink-go/interlink/internal/protocol"
	"github.com/interlink-go/interlink/internal/store"
	natsstore "github.com/interlink-go/interlink/internal/store/nats"
)

// Defaults of [Options].
const (
	DefaultAge     = protocol.RosterRetention
	DefaultRecords = 8192
	DefaultValue   = 16 << 10
)

// Options holds the settings of [Open]. A nil *Options, like each zero
// field, means the default.
type Options struct {
	// MaxAge is how long a record stays in the bucket after it was
	// written; [DefaultAge] unless set.
	MaxAge time.Duration
	// MaxRecords bounds the records the bucket holds, removals included;
	// a full bucket discards its oldest record to take a new one.
	// [DefaultRecords] unless set.
	MaxRecords int
	// MaxValue is the largest record [Roster.Put] takes, key and
	// value together; [DefaultValue] unless set.
	MaxValue int
}

func (o *Options) maxAge() time.Duration {
	if o == nil || o.MaxAge <= 0 {
		return DefaultAge
	}
	return o.MaxAge
}

func (o *Options) maxRecords() int {
	if o == nil || o.MaxRecords <= 0 {
		return DefaultRecords
	}
	return o.MaxRecords
}

func (o *Options) maxValue() int {
	if o == nil || o.MaxValue <= 0 {
		return DefaultValue
	}
	return o.MaxValue
}

// Roster is the bus roster's records in a JetStream key-value bucket
// beside the queue stream of a [natsstore.Store], so that every process on the
// stream sees the same roster. The store does not interpret the records:
// a record is a key (any string) and a value, and every change has a
// revision, the bucket stream's sequence, which only grows.
//
// The bucket is named after the queue stream: stream S keeps its roster in
// bucket S_ROSTER, whose stream is KV_S_ROSTER. It keeps one record per
// key, each for [Options.MaxAge] after it was written, and at
// most [Options.MaxRecords] records, discarding the oldest when
// full. Unlike a bucket that `nats kv add` makes, single records may be
// removed from its stream ([Roster.Drop]).
//
// Bucket keys. A record's key in the bucket is "k" and the key in
// unpadded base64url when that stays under [rosterKeyMax] bytes, and
// otherwise "h" and the base64url SHA-256 of the key, so any string is a
// valid bucket key of bounded length. The stored value starts with the key
// itself, as a decimal length, a colon and the key, so a hashed key can be
// read back; a record whose stored key does not give its bucket key is
// ignored.
type Roster struct {
	s          *natsstore.Conn
	stream     jetstream.Stream // the bucket's stream
	bucket     string
	subject    string // the subject prefix of the bucket's keys
	maxValue   int
	maxRecords int
}

// kvOperation is the header that makes a key-value record a delete or
// purge marker, as the key-value clients write it.
const kvOperation = "KV-Operation"

// rosterKeyMax is the longest key that keeps a readable bucket key; longer
// ones are hashed. 512 bytes make a bucket key of 684 characters, well
// inside the 4 KiB a NATS protocol line may take.
const rosterKeyMax = 512

// Open opens the roster bucket of st's stream, creating it if it does
// not exist, with the stream's replica count. Its errors are like those of
// [natsstore.Open]: a [*natsstore.StreamConfigError] when an existing
// bucket does not fit, an error wrapping [natsstore.ErrUnreachable] while
// the connection is down. The roster lives as long as st.
func Open(st *natsstore.Store, opts *Options) (*Roster, error) {
	s := st.Conn()
	if s.Closed() {
		return nil, store.ErrClosed
	}
	ctx, cancel := s.Request()
	defer cancel()
	js := s.JetStream()
	bucket := s.Stream() + "_ROSTER"
	want := rosterConfig(bucket, opts.maxAge(), opts.maxRecords(), opts.maxValue(), s.Replicas())
	stream, err := js.Stream(ctx, want.Name)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		stream, err = js.CreateStream(ctx, want)
		switch {
		case errors.Is(err, jetstream.ErrStreamNameAlreadyInUse):
			stream, err = js.Stream(ctx, want.Name)
		case err == nil:
			s.Logger().Info("roster bucket created", "bucket", bucket)
		}
	}
	if err != nil {
		return nil, s.Wrap(fmt.Sprintf("open roster bucket %q", bucket), err)
	}
	if ms := compareRosterConfig(stream.CachedInfo().Config, want); len(ms) > 0 {
		return nil, (&natsstore.StreamConfigError{Stream: want.Name, Mismatches: ms, Hint: fmt.Sprintf(
			"remove the bucket (nats kv rm %s) and start the bus again to make it anew; "+
				"the roster fills again as sessions announce themselves, every 30 seconds", bucket)}).AsStoreError()
	}
	return &Roster{
		s:          s,
		stream:     stream,
		bucket:     bucket,
		subject:    "$KV." + bucket + ".",
		maxValue:   opts.maxValue(),
		maxRecords: opts.maxRecords(),
	}, nil
}

// rosterConfig returns the settings of the roster bucket's stream: those
// of a key-value bucket with a history of one, except that the bucket
// discards its oldest record when full and allows removing one record.
func rosterConfig(bucket string, maxAge time.Duration, records, value, replicas int) jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:              "KV_" + bucket,
		Description:       "interlink bus roster, one key per announced session",
		Subjects:          []string{"$KV." + bucket + ".>"},
		Retention:         jetstream.LimitsPolicy,
		MaxConsumers:      -1,
		MaxMsgs:           int64(records),
		MaxBytes:          -1,
		MaxAge:            maxAge,
		MaxMsgsPerSubject: 1,
		// The record, the length of its key, and a marker's header.
		MaxMsgSize:  int32(value + 256),
		Discard:     jetstream.DiscardOld,
		Storage:     jetstream.FileStorage,
		Replicas:    replicas,
		Duplicates:  min(2*time.Minute, maxAge),
		AllowRollup: true,
		AllowDirect: true,
	}
}

// compareRosterConfig lists the settings of an existing roster bucket
// that break what the roster relies on.
func compareRosterConfig(have, want jetstream.StreamConfig) []natsstore.ConfigMismatch {
	var ms []natsstore.ConfigMismatch
	add := func(field string, have, want any) {
		if h, w := fmt.Sprint(have), fmt.Sprint(want); h != w {
			ms = append(ms, natsstore.ConfigMismatch{Field: field, Have: h, Want: w})
		}
	}
	add("subjects", "["+strings.Join(have.Subjects, " ")+"]", "["+strings.Join(want.Subjects, " ")+"]")
	add("retention", have.Retention, want.Retention)
	add("storage", have.Storage, want.Storage)
	add("num_replicas", have.Replicas, want.Replicas)
	add("max_msgs_per_subject", have.MaxMsgsPerSubject, want.MaxMsgsPerSubject)
	add("max_msgs", limit(have.MaxMsgs), limit(want.MaxMsgs))
	add("max_age", age(have.MaxAge), age(want.MaxAge))
	add("discard", have.Discard, want.Discard)
	add("deny_delete", have.DenyDelete, want.DenyDelete)
	add("sealed", have.Sealed, want.Sealed)
	add("max_msg_size", limit(int64(have.MaxMsgSize)), limit(int64(want.MaxMsgSize)))
	add("mirror", have.Mirror != nil, want.Mirror != nil)
	return ms
}

// limit prints a JetStream limit, where zero and negative mean none, as
// the queue stream's mismatches print them.
func limit(n int64) string {
	if n <= 0 {
		return "unlimited"
	}
	return strconv.FormatInt(n, 10)
}

// age prints a JetStream age limit, where zero and negative mean none.
func age(d time.Duration) string {
	if d <= 0 {
		return "unlimited"
	}
	return d.String()
}

// keyEncoding encodes keys into bucket keys, as the queue stream encodes
// routes into subjects.
var keyEncoding = base64.RawURLEncoding.Strict()

// Bucket returns the bucket's name.
func (r *Roster) Bucket() string { return r.bucket }

// bucketKey returns the bucket key of key (see [Roster]).
func bucketKey(key string) string {
	if len(key) <= rosterKeyMax {
		return "k" + keyEncoding.EncodeToString([]byte(key))
	}
	sum := sha256.Sum256([]byte(key))
	return "h" + keyEncoding.EncodeToString(sum[:])
}

// recordBody returns what the bucket stores for key and value.
func recordBody(key string, value []byte) []byte {
	b := make([]byte, 0, 8+len(key)+len(value))
	b = strconv.AppendInt(b, int64(len(key)), 10)
	b = append(b, ':')
	b = append(b, key...)
	return append(b, value...)
}

// parseRecord reads a body that [recordBody] made and checks that its key
// gives bk. ok is false for anything else.
func parseRecord(bk string, body []byte) (key string, value []byte, ok bool) {
	i := bytes.IndexByte(body[:min(len(body), 8)], ':')
	if i <= 0 || (body[0] == '0' && i > 1) {
		return "", nil, false
	}
	size := 0
	for _, c := range body[:i] {
		if c < '0' || c > '9' {
			return "", nil, false
		}
		size = 10*size + int(c-'0')
	}
	rest := body[i+1:]
	if size > len(rest) {
		return "", nil, false
	}
	key = string(rest[:size])
	if bucketKey(key) != bk {
		return "", nil, false
	}
	return key, rest[size:], true
}

// Put stores value as the record of key and returns its revision.
func (r *Roster) Put(key string, value []byte) (rev uint64, err error) {
	if r.s.Closed() {
		return 0, store.ErrClosed
	}
	if n := len(key) + len(value); n > r.maxValue {
		return 0, store.Errorf(nil, "roster record of %d bytes, at most %d", n, r.maxValue)
	}
	ctx, cancel := r.s.Request()
	defer cancel()
	ack, err := r.s.JetStream().Publish(ctx, r.subject+bucketKey(key), recordBody(key, value))
	if err != nil {
		return 0, r.s.Wrap("roster put", err)
	}
	return ack.Sequence, nil
}

// Delete records that key has no record any more, as a key-value delete
// marker that names the key, and returns the marker's revision.
func (r *Roster) Delete(key string) (rev uint64, err error) {
	if r.s.Closed() {
		return 0, store.ErrClosed
	}
	ctx, cancel := r.s.Request()
	defer cancel()
	m := nats.NewMsg(r.subject + bucketKey(key))
	m.Header.Set(kvOperation, "DEL")
	m.Data = recordBody(key, nil)
	ack, err := r.s.JetStream().PublishMsg(ctx, m)
	if err != nil {
		return 0, r.s.Wrap("roster delete", err)
	}
	return ack.Sequence, nil
}

// Drop removes the record of revision rev from the bucket without a
// marker, so watchers are not told; it is for records every process has
// stopped using. A revision that is gone already is no error.
func (r *Roster) Drop(rev uint64) error {
	if r.s.Closed() {
		return store.ErrClosed
	}
	ctx, cancel := r.s.Request()
	defer cancel()
	err := r.stream.DeleteMsg(ctx, rev)
	if errors.Is(err, jetstream.ErrMsgNotFound) || errors.Is(err, jetstream.ErrMsgDeleteUnsuccessful) {
		return nil
	}
	return r.s.Wrap("roster drop", err)
}

// Watch calls apply with the records of the bucket in revision order: first
// the last record of each key there now, then every change as it comes.
// value is nil for a removal. The watch is an ordered consumer of the
// bucket's stream, which the client starts again after the last revision
// it delivered whenever it stopped (the connection dropped, the server
// restarted), so changes come late rather than never. apply sees each
// revision at most once, in increasing order. Calls come from the store's
// goroutines, one at a time; they end when stop has returned or the store
// is closed.
//
// Until the consumer runs (the server may be unreachable when Watch is
// called), a goroutine of the store tries again with growing pauses.
func (r *Roster) Watch(apply func(rev uint64, key string, value []byte)) (stop func()) {
	w := &rosterWatch{r: r, apply: apply}
	return r.s.Go(func(ctx context.Context) {
		r.s.KeepConsuming(ctx, w.start, nil, "cannot watch the roster bucket; trying again", "bucket", r.bucket)
	})
}

// rosterWatch is one [Roster.Watch].
type rosterWatch struct {
	r     *Roster
	apply func(uint64, string, []byte)

	mu   sync.Mutex // held while apply runs
	last uint64     // guarded by mu; the last revision delivered
}

// start creates the ordered consumer and starts consuming from it.
func (w *rosterWatch) start(ctx context.Context) (jetstream.ConsumeContext, error) {
	r := w.r
	rctx, cancel := context.WithTimeout(ctx, r.s.Timeout())
	defer cancel()
	cfg := jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{r.subject + ">"},
		DeliverPolicy:  jetstream.DeliverLastPerSubjectPolicy,
	}
	w.mu.Lock()
	if w.last > 0 {
		cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, w.last+1
	}
	w.mu.Unlock()
	cons, err := r.stream.OrderedConsumer(rctx, cfg)
	if err != nil {
		return nil, r.s.Wrap("roster watch", err)
	}
	cc, err := cons.Consume(w.deliver, jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
		if !r.s.Closed() {
			r.s.Logger().Debug("roster bucket watch", "bucket", r.bucket, "err", err)
		}
	}))
	if err != nil {
		return nil, r.s.Wrap("roster watch", err)
	}
	return cc, nil
}

// deliver hands one message of the bucket's stream to apply.
func (w *rosterWatch) deliver(m jetstream.Msg) {
	meta, err := m.Metadata()
	if err != nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	rev := meta.Sequence.Stream
	if rev <= w.last {
		return
	}
	w.last = rev
	bk, ok := strings.CutPrefix(m.Subject(), w.r.subject)
	if !ok {
		return
	}
	key, value, ok := decodeRecord(bk, m.Headers().Get(kvOperation), m.Data())
	if !ok {
		w.r.s.Logger().Debug("roster bucket record ignored", "bucket", w.r.bucket, "key", bk, "revision", rev)
		return
	}
	w.apply(rev, key, value)
}

// decodeRecord returns the key and value of a record with bucket key bk,
// the key-value operation op (empty for a put) and the body, with a nil
// value for a removal.
func decodeRecord(bk, op string, body []byte) (key string, value []byte, ok bool) {
	switch op {
	case "":
		key, value, ok = parseRecord(bk, body)
		if ok && value == nil {
			value = []byte{}
		}
		return key, value, ok
	case "DEL", "PURGE":
		if key, _, ok := parseRecord(bk, body); ok {
			return key, nil, true
		}
		// A marker written by another client names only the bucket key,
		// which is enough unless the key was hashed.
		if enc, found := strings.CutPrefix(bk, "k"); found {
			if k, err := keyEncoding.DecodeString(enc); err == nil && bucketKey(string(k)) == bk {
				return string(k), nil, true
			}
		}
	}
	return "", nil, false
}
