package bolt

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	bbolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/interlink-go/interlink/internal/store"
)

// Database layout. The messages bucket maps [store.Key] to the stored
// value; keys of one route share the prefix [store.RoutePrefix] and sort
// by sequence. The meta bucket holds next_seq, the sequence of the next
// entry, as 8 big-endian bytes; it starts at 0 in a new file.
var (
	bucketMessages = []byte("messages")
	bucketMeta     = []byte("meta")
	keyNextSeq     = []byte("next_seq")
)

const (
	// lockTimeout is how long Open waits for the file lock before it
	// gives up with ErrLocked.
	lockTimeout = time.Second
	// lockRetry is how often a lock held by another process is tried
	// again, as bbolt does.
	lockRetry = 50 * time.Millisecond
)

// Store is a [store.Store] kept in a bbolt database file; the package
// comment says how it writes, acknowledges and reads. Its work is split
// by concern: the writer (write.go) makes every write transaction, the
// acknowledgements waiting for it are an [ackSet] (acks.go), reads are in
// read.go, and the check of a file before bbolt maps it in preflight.go.
type Store struct {
	db   *bbolt.DB    // fixed at open
	path string       // fixed at open
	cap  int          // fixed at open
	log  *slog.Logger // fixed at open
	// routeBytes and totalBytes are the byte bounds; fixed at open.
	routeBytes, totalBytes int64

	// mu orders what readers see against the writer's commits. Peek and
	// Depth hold it for reading; Delete, and the writer when it applies a
	// commit, hold it for writing.
	mu     sync.RWMutex
	counts *routeCounts // committed counts; see routeCounts for its locking
	acks   ackSet       // guarded by mu

	w      writer // makes every write transaction; see writer for its locking
	health health // has its own synchronization
	closed atomic.Bool
}

var (
	_ store.Store   = (*Store)(nil)
	_ store.Totaler = (*Store)(nil)
	_ store.Failer  = (*Store)(nil)
)

// Open opens the database at path, creating the file (mode 0600) if it
// does not exist. The directory must exist already. If another process holds
// the file, Open gives up after about a second with an error wrapping
// [ErrLocked]. It uses the cap, the byte bounds and the logger of opts.
//
// An existing file is checked before bbolt reads it (see preflight.go): a
// file that is damaged, cut short or not a database gives a
// [*CorruptError] instead of a crash, and is left exactly as it was: its
// mode, content and modification time. A file other users can read is
// made private (mode 0600) with a warning once it has opened as a
// database, and an empty file, which bbolt turns into a new database, is
// reported with a warning too.
func Open(path string, opts *Options) (*Store, error) {
	dir := filepath.Dir(path)
	if fi, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("store: open %s: %s is not a directory", path, dir)
	}
	o := opts.base().WithDefaults()
	log := o.Logger
	existing, err := inspect(path, log)
	if err != nil {
		return nil, err
	}
	if existing != nil {
		defer existing.Close()
	}
	db, err := openGuarded(path)
	if errors.Is(err, berrors.ErrTimeout) {
		return nil, fmt.Errorf("%w: %s (waited %v)", ErrLocked, path, lockTimeout)
	}
	if ce, ok := errors.AsType[*CorruptError](err); ok {
		ce.Path = path
		return nil, ce
	}
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	s := &Store{db: db, path: path, cap: o.Cap, log: log, routeBytes: o.RouteBytes, totalBytes: o.TotalBytes}
	s.health.init()
	start := time.Now()
	counts, entries, err := s.prepare()
	if err != nil {
		// After a panic bbolt's state is unknown; the handle is left to
		// the end of the process rather than risk Close.
		if s.health.err() == nil {
			db.Close()
		}
		if _, ok := errors.AsType[*CorruptError](err); ok {
			return nil, s.wrap("open", err)
		}
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	s.counts = newRouteCounts(counts)
	// Only a file now known to be a database (or an empty one bbolt made
	// one of) is tightened: a file refused above is left as it was.
	if existing != nil {
		tightenOpened(existing, path, log)
	}
	s.acks.init()
	s.w.start(s, opts.ackDelay(), opts.observeCommit())
	s.log.Debug("store opened", "db", path, "routes", len(counts), "entries", entries,
		"bytes", s.counts.bytes(), "elapsed", time.Since(start))
	if held := s.counts.bytes(); held > s.totalBytes {
		s.log.Warn("the queues hold more than the total byte bound; sends are refused until receivers make room",
			"bytes", held, "total_bytes", s.totalBytes)
	}
	return s, nil
}

// openGuarded opens the bbolt file at path. A panic in bbolt, or a fault on
// the memory it maps, becomes a *CorruptError (without a path): the file
// was checked, so either means it changed or bbolt trusts something the
// check does not look at. A file handle bbolt left open then stays open
// until the process ends, which it is about to.
func openGuarded(path string) (db *bbolt.DB, err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			db, err = nil, &CorruptError{Detail: fmt.Sprintf("bbolt could not read it: %v", r)}
		}
	}()
	return bbolt.Open(path, 0o600, &bbolt.Options{Timeout: lockTimeout})
}

// prepare creates the buckets when missing and counts the entries and bytes
// of every route with one scan. It writes only when the buckets are missing or the
// stored next_seq is not above every stored sequence (a damaged file), which
// it then raises.
func (s *Store) prepare() (counts map[string]routeSize, entries int, err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer s.guard("open", &err)
	var repair bool
	err = s.db.View(func(tx *bbolt.Tx) error {
		if tx.Bucket(bucketMessages) == nil || tx.Bucket(bucketMeta) == nil {
			repair = true
			return nil
		}
		counts, entries, repair, err = s.scan(tx)
		return err
	})
	if err != nil || !repair {
		return counts, entries, err
	}
	err = s.db.Update(func(tx *bbolt.Tx) error {
		for _, name := range [][]byte{bucketMessages, bucketMeta} {
			_, err := tx.CreateBucketIfNotExists(name)
			if errors.Is(err, berrors.ErrIncompatibleValue) {
				return &CorruptError{Detail: fmt.Sprintf("it holds a value where the %s bucket belongs", name)}
			}
			if err != nil {
				return err
			}
		}
		counts, entries, _, err = s.scan(tx)
		return err
	})
	return counts, entries, err
}

// scan counts every route's entries and their sizes. It reports whether
// next_seq is not above every stored sequence, and in a writable
// transaction it raises it.
func (s *Store) scan(tx *bbolt.Tx) (counts map[string]routeSize, entries int, repair bool, err error) {
	meta := tx.Bucket(bucketMeta)
	next, err := readNextSeq(meta)
	if err != nil {
		return nil, 0, false, err
	}
	counts = make(map[string]routeSize)
	var (
		foreign int    // keys the store did not make; never served
		minNext uint64 // one more than the highest stored sequence
		run     string // route of the current run of keys
		runSize routeSize
	)
	add := func() {
		rs := counts[run]
		counts[run] = routeSize{rs.n + runSize.n, rs.bytes + runSize.bytes}
	}
	c := tx.Bucket(bucketMessages).Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		route, seq, ok := store.ParseKey(string(k))
		if !ok {
			foreign++
			continue
		}
		entries++
		minNext = max(minNext, seq+1)
		size := store.EntrySize(route, len(v))
		// Keys of one route are adjacent, so count runs and touch the
		// map once per route.
		if runSize.n > 0 && route == run {
			runSize.n++
			runSize.bytes += size
			continue
		}
		if runSize.n > 0 {
			add()
		}
		run, runSize = strings.Clone(route), routeSize{1, size}
	}
	if runSize.n > 0 {
		add()
	}
	if foreign > 0 && !tx.Writable() {
		s.log.Warn("ignoring keys the store did not make", "keys", foreign)
	}
	if next >= minNext {
		return counts, entries, false, nil
	}
	if tx.Writable() {
		s.log.Warn("raising next_seq above the stored keys", "next_seq", next, "new_next_seq", minNext)
		if err := writeNextSeq(meta, minNext); err != nil {
			return nil, 0, false, err
		}
	}
	return counts, entries, true, nil
}

func readNextSeq(meta *bbolt.Bucket) (uint64, error) {
	v := meta.Get(keyNextSeq)
	if v == nil {
		return 0, nil
	}
	if len(v) != 8 {
		return 0, &CorruptError{Detail: fmt.Sprintf("its next sequence number has %d bytes, not 8", len(v))}
	}
	return binary.BigEndian.Uint64(v), nil
}

func writeNextSeq(meta *bbolt.Bucket, seq uint64) error {
	return meta.Put(keyNextSeq, binary.BigEndian.AppendUint64(nil, seq))
}

// Close implements [Store.Close]: it waits for the writes in progress,
// commits the acknowledgements still waiting, and closes the file,
// releasing its lock. Calling it again returns [store.ErrClosed].
//
// A store found damaged (see [Store.Failed]) is not closed: after a panic in
// bbolt its locks may still be held, and closing could hang. Close then
// returns the failure, and the file and its lock stay open until the
// process ends.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return store.ErrClosed
	}
	unlock := s.w.close()
	defer unlock()
	if ce := s.health.err(); ce != nil {
		return ce
	}
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("store: close: %w", err)
	}
	return nil
}

// wrap adds context to an error from bbolt, turning the error for a closed
// database (a call racing with Close) into store.ErrClosed. A *CorruptError
// marks the store failed and is returned as it is.
func (s *Store) wrap(op string, err error) error {
	if ce, ok := errors.AsType[*CorruptError](err); ok {
		ce.Path = s.path
		s.health.fail(ce)
		return ce
	}
	if errors.Is(err, berrors.ErrDatabaseNotOpen) {
		return store.ErrClosed
	}
	return fmt.Errorf("store: %s: %w", op, err)
}

// usable returns store.ErrClosed after Close, the failure after the file
// was found damaged, and nil otherwise.
func (s *Store) usable() error {
	if s.closed.Load() {
		return store.ErrClosed
	}
	if ce := s.health.err(); ce != nil {
		return ce
	}
	return nil
}

// guard is deferred by every operation that reads the mapped file, after
// debug.SetPanicOnFault(true). The file was checked when it opened, so a
// panic in bbolt, or a fault on memory past the end of a file that shrank,
// means the file changed under the bus; the operation then fails with a
// *CorruptError and the store stops touching the file.
func (s *Store) guard(op string, err *error) {
	r := recover()
	if r == nil {
		return
	}
	ce := &CorruptError{Path: s.path, Detail: fmt.Sprintf("%s failed: %v", op, r)}
	s.health.fail(ce)
	*err = ce
}

// Failed implements [store.Failer]: it returns a channel that is closed
// when an operation finds the database file damaged. From then on every
// method returns that *CorruptError, also from [Store.Err]; the bus
// should stop, since the file needs its operator.
func (s *Store) Failed() <-chan struct{} { return s.health.failed }

// Err implements [store.Failer]: it returns the *CorruptError that closed
// [Store.Failed], or nil.
func (s *Store) Err() error {
	if ce := s.health.err(); ce != nil {
		return ce
	}
	return nil
}

// health is whether a [Store] found its file damaged. failed is closed,
// and failure set, by the first fail; every operation after that returns
// failure.
type health struct {
	failed  chan struct{} // fixed at init
	failure atomic.Pointer[CorruptError]
	once    sync.Once
}

func (h *health) init() { h.failed = make(chan struct{}) }

// fail records the first failure and closes failed.
func (h *health) fail(ce *CorruptError) {
	h.once.Do(func() {
		h.failure.Store(ce)
		close(h.failed)
	})
}

// err returns the failure, or nil.
func (h *health) err() *CorruptError { return h.failure.Load() }
