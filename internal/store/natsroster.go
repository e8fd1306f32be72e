package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/interlink-go/interlink/internal/protocol"
)

// Defaults of [NATSRosterOptions].
const (
	DefaultRosterAge     = protocol.RosterRetention
	DefaultRosterRecords = 8192
	DefaultRosterValue   = 16 << 10
)

// NATSRosterOptions holds the settings of [NATS.OpenRoster]. A nil
// *NATSRosterOptions, like each zero field, means the default.
type NATSRosterOptions struct {
	// MaxAge is how long a record stays in the bucket after it was
	// written; [DefaultRosterAge] unless set.
	MaxAge time.Duration
	// MaxRecords bounds the records the bucket holds, removals included;
	// a full bucket discards its oldest record to take a new one.
	// [DefaultRosterRecords] unless set.
	MaxRecords int
	// MaxValue is the largest record [NATSRoster.Put] takes, key and
	// value together; [DefaultRosterValue] unless set.
	MaxValue int
}

func (o *NATSRosterOptions) maxAge() time.Duration {
	if o == nil || o.MaxAge <= 0 {
		return DefaultRosterAge
	}
	return o.MaxAge
}

func (o *NATSRosterOptions) maxRecords() int {
	if o == nil || o.MaxRecords <= 0 {
		return DefaultRosterRecords
	}
	return o.MaxRecords
}

func (o *NATSRosterOptions) maxValue() int {
	if o == nil || o.MaxValue <= 0 {
		return DefaultRosterValue
	}
	return o.MaxValue
}

// NATSRoster is the bus roster's records in a JetStream key-value bucket
// beside the queue stream of a [NATS] store, so that every process on the
// stream sees the same roster. The store does not interpret the records:
// a record is a key (any string) and a value, and every change has a
// revision, the bucket stream's sequence, which only grows.
//
// The bucket is named after the queue stream: stream S keeps its roster in
// bucket S_ROSTER, whose stream is KV_S_ROSTER. It keeps one record per
// key, each for [NATSRosterOptions.MaxAge] after it was written, and at
// most [NATSRosterOptions.MaxRecords] records, discarding the oldest when
// full. Unlike a bucket that `nats kv add` makes, single records may be
// removed from its stream ([NATSRoster.Drop]).
//
// Bucket keys. A record's key in the bucket is "k" and the key in
// unpadded base64url when that stays under [rosterKeyMax] bytes, and
// otherwise "h" and the base64url SHA-256 of the key, so any string is a
// valid bucket key of bounded length. The stored value starts with the key
// itself, as a decimal length, a colon and the key, so a hashed key can be
// read back; a record whose stored key does not give its bucket key is
// ignored.
type NATSRoster struct {
	s          *NATS
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

// OpenRoster opens the roster bucket of the store's stream, creating it if
// it does not exist, with the stream's replica count. Its errors are those
// of [OpenNATS]: a [*StreamConfigError] when an existing bucket does not
// fit, an error wrapping [ErrUnreachable] while the connection is down.
func (s *NATS) OpenRoster(opts *NATSRosterOptions) (*NATSRoster, error) {
	if s.closed.Load() {
		return nil, ErrClosed
	}
	ctx, cancel := s.ctx()
	defer cancel()
	bucket := s.name + "_ROSTER"
	want := rosterConfig(bucket, opts.maxAge(), opts.maxRecords(), opts.maxValue(), s.stream.CachedInfo().Config.Replicas)
	stream, err := s.js.Stream(ctx, want.Name)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		stream, err = s.js.CreateStream(ctx, want)
		switch {
		case errors.Is(err, jetstream.ErrStreamNameAlreadyInUse):
			stream, err = s.js.Stream(ctx, want.Name)
		case err == nil:
			s.log.Info("roster bucket created", "bucket", bucket)
		}
	}
	if err != nil {
		return nil, s.wrap(fmt.Sprintf("open roster bucket %q", bucket), err)
	}
	if ms := compareRosterConfig(stream.CachedInfo().Config, want); len(ms) > 0 {
		return nil, &StreamConfigError{Stream: want.Name, Mismatches: ms, Hint: fmt.Sprintf(
			"remove the bucket (nats kv rm %s) and start the bus again to make it anew; "+
				"the roster fills again as sessions announce themselves, every 30 seconds", bucket)}
	}
	return &NATSRoster{
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
func compareRosterConfig(have, want jetstream.StreamConfig) []ConfigMismatch {
	var ms mismatches
	add := ms.add
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

// Bucket returns the bucket's name.
func (r *NATSRoster) Bucket() string { return r.bucket }

// bucketKey returns the bucket key of key (see [NATSRoster]).
func bucketKey(key string) string {
	if len(key) <= rosterKeyMax {
		return "k" + routeEncoding.EncodeToString([]byte(key))
	}
	sum := sha256.Sum256([]byte(key))
	return "h" + routeEncoding.EncodeToString(sum[:])
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
func (r *NATSRoster) Put(key string, value []byte) (rev uint64, err error) {
	if r.s.closed.Load() {
		return 0, ErrClosed
	}
	if n := len(key) + len(value); n > r.maxValue {
		return 0, fmt.Errorf("store: roster record of %d bytes, at most %d", n, r.maxValue)
	}
	ctx, cancel := r.s.ctx()
	defer cancel()
	ack, err := r.s.js.Publish(ctx, r.subject+bucketKey(key), recordBody(key, value))
	if err != nil {
		return 0, r.s.wrap("roster put", err)
	}
	return ack.Sequence, nil
}

// Delete records that key has no record any more, as a key-value delete
// marker that names the key, and returns the marker's revision.
func (r *NATSRoster) Delete(key string) (rev uint64, err error) {
	if r.s.closed.Load() {
		return 0, ErrClosed
	}
	ctx, cancel := r.s.ctx()
	defer cancel()
	m := nats.NewMsg(r.subject + bucketKey(key))
	m.Header.Set(kvOperation, "DEL")
	m.Data = recordBody(key, nil)
	ack, err := r.s.js.PublishMsg(ctx, m)
	if err != nil {
		return 0, r.s.wrap("roster delete", err)
	}
	return ack.Sequence, nil
}

// Drop removes the record of revision rev from the bucket without a
// marker, so watchers are not told; it is for records every process has
// stopped using. A revision that is gone already is no error.
func (r *NATSRoster) Drop(rev uint64) error {
	if r.s.closed.Load() {
		return ErrClosed
	}
	ctx, cancel := r.s.ctx()
	defer cancel()
	err := r.stream.DeleteMsg(ctx, rev)
	if errors.Is(err, jetstream.ErrMsgNotFound) || errors.Is(err, jetstream.ErrMsgDeleteUnsuccessful) {
		return nil
	}
	return r.s.wrap("roster drop", err)
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
func (r *NATSRoster) Watch(apply func(rev uint64, key string, value []byte)) (stop func()) {
	s := r.s
	ctx, cancel := context.WithCancel(s.bg.life)
	done := make(chan struct{})
	w := &rosterWatch{r: r, apply: apply}
	s.bg.wg.Add(1)
	go func() {
		defer s.bg.wg.Done()
		defer close(done)
		s.runWatch(ctx, w.start, nil, "cannot watch the roster bucket; trying again", "bucket", r.bucket)
	}()
	return func() {
		cancel()
		<-done
	}
}

// rosterWatch is one [NATSRoster.Watch].
type rosterWatch struct {
	r     *NATSRoster
	apply func(uint64, string, []byte)

	mu   sync.Mutex // held while apply runs
	last uint64     // guarded by mu; the last revision delivered
}

// start creates the ordered consumer and starts consuming from it.
func (w *rosterWatch) start(ctx context.Context) (jetstream.ConsumeContext, error) {
	r := w.r
	rctx, cancel := context.WithTimeout(ctx, r.s.timeout)
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
		return nil, r.s.wrap("roster watch", err)
	}
	cc, err := cons.Consume(w.deliver, jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
		if !r.s.closed.Load() {
			r.s.log.Debug("roster bucket watch", "bucket", r.bucket, "err", err)
		}
	}))
	if err != nil {
		return nil, r.s.wrap("roster watch", err)
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
		w.r.s.log.Debug("roster bucket record ignored", "bucket", w.r.bucket, "key", bk, "revision", rev)
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
			if k, err := routeEncoding.DecodeString(enc); err == nil && bucketKey(string(k)) == bk {
				return string(k), nil, true
			}
		}
	}
	return "", nil, false
}
