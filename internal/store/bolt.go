package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// Database layout. The messages bucket maps [Key] to the stored value; keys
// of one route share the prefix [RoutePrefix] and sort by sequence. The meta
// bucket holds next_seq, the sequence of the next entry, as 8 big-endian
// bytes; it starts at 0 in a new file.
var (
	bucketMessages = []byte("messages")
	bucketMeta     = []byte("meta")
	keyNextSeq     = []byte("next_seq")
)

const (
	// lockTimeout is how long OpenBolt waits for the file lock before it
	// gives up with ErrLocked.
	lockTimeout = time.Second
	// lockRetry is how often a lock held by another process is tried
	// again, as bbolt does.
	lockRetry = 50 * time.Millisecond
)

// Bolt is a [Store] kept in a bbolt database file, so queues and the
// sequence survive restarts.
//
// # Writes
//
// [Bolt.Enqueue] returns once the transaction holding its entry has
// committed with fsync: when Enqueue returns without error, the entry is on
// disk. An enqueue that finds no commit in progress writes its own
// transaction at once. Enqueues that arrive while a commit is being written
// go to a goroutine of the store, the writer, which puts all that wait into
// the next transaction, so concurrent senders share the cost of the fsync
// without any added delay. The writer also commits acknowledgements.
//
// An enqueue is part of one transaction that takes the next sequence number,
// stores the entry and drops the oldest entries of the route while it holds
// more than the cap or the per-route bytes, so a crash never leaves a queue
// over its bounds because of a half-done send. Whether the enqueue fits in
// the total bytes is decided first, from the cached sizes, and a refused
// enqueue changes nothing; the other enqueues of its transaction go ahead.
// Bounds lowered between runs are enforced lazily: a queue keeps its
// excess until the next enqueue to it trims it, and a store over its new
// total refuses every enqueue until deletes make room.
//
// # Acknowledgements
//
// [Bolt.Delete] does not wait for a commit. It marks the entry acknowledged
// in memory and returns; from then on [Bolt.Peek] skips the entry and
// [Bolt.Depth] does not count it. The writer deletes every acknowledged
// entry in its next transaction: the next enqueue's, or, when no enqueue
// comes within [Options.AckDelay], one of their own. So a sequential
// send, receive and acknowledge costs one commit per message, not two. A
// crash loses at most the acknowledgements of the last AckDelay, whose
// entries are delivered again after the restart; receivers drop those as
// replays of messages they have. [Bolt.Close] commits the acknowledgements
// still waiting.
//
// Acknowledged entries count for nothing: an enqueue deletes them before it
// applies the cap, so they never make a full queue drop an unacknowledged
// entry, and a drop is reported only for entries nobody acknowledged.
//
// # Reads
//
// Peek reads in a read-only transaction and copies the entry out of it. The
// number of entries and bytes per route is cached in memory, so enqueue and
// Depth need not count a queue. [OpenBolt] builds the cache with one scan of
// every key and the length of its value, which makes opening linear in the
// number of stored entries.
type Bolt struct {
	db       *bolt.DB      // fixed at open
	path     string        // fixed at open
	cap      int           // fixed at open
	log      *slog.Logger  // fixed at open
	ackDelay time.Duration // fixed at open
	// observe is Options.ObserveCommit; fixed at open, may be nil.
	observe func(time.Duration)
	// routeBytes and totalBytes are the byte bounds; fixed at open.
	routeBytes, totalBytes int64

	// The bounds of the acknowledgements waiting, fixed at open (tests
	// lower them before first use): see defaultMaxAcked and
	// defaultAckFlushAt.
	maxAcked, ackFlushAt int

	// mu orders what readers see against the writer's commits. Peek and
	// Depth hold it for reading; Delete, and the writer when it applies a
	// commit, hold it for writing.
	mu     sync.RWMutex
	counts *routeCounts     // committed counts; see routeCounts for its locking
	acked  map[string]int64 // guarded by mu; keys acknowledged and stored, whose delete is not committed, with their EntrySize
	ackedN map[string]int   // guarded by mu; the number of acked keys per route; no zero entries
	// ackedBytes is the sizes in acked, summed; guarded by mu.
	ackedBytes int64

	// wmu is held by whoever writes a transaction: the writer goroutine,
	// or an Enqueue that found no commit in progress and writes its own
	// (see enqueueInline). The counts' delta belongs to its holder.
	wmu sync.Mutex
	// stopping is set by Close before it stops the writer; an Enqueue
	// that sees it returns ErrClosed rather than write.
	stopping atomic.Bool

	// The writer's inbox. writes is unbuffered: an enqueue blocks until the
	// writer takes it, or gives up when stop is closed.
	writes     chan *writeReq
	kick       chan struct{}   // capacity 1: acknowledgements are waiting
	armed      atomic.Bool     // the writer's timer for acknowledgements runs
	flushes    chan chan error // requests to commit the acknowledgements now
	stop       chan struct{}   // closed by Close
	writerDone chan struct{}   // closed when the writer has returned

	// failed is closed, and failure set, when an operation finds the file
	// damaged; every operation after that returns failure.
	failed   chan struct{}
	failure  atomic.Pointer[CorruptError]
	failOnce sync.Once

	closed atomic.Bool
}

var _ Store = (*Bolt)(nil)

// OpenBolt opens the database at path, creating the file (mode 0600) if it
// does not exist. The directory must exist already. If another process holds
// the file, OpenBolt gives up after about a second with an error wrapping
// [ErrLocked]. It uses opts.Cap, the byte bounds and opts.Logger.
//
// An existing file is checked before bbolt reads it (see [checkFile]): a
// file that is damaged, cut short or not a database gives a
// [*CorruptError] instead of a crash, and is left exactly as it was: its
// mode, content and modification time. A file other users can read is
// made private (mode 0600) with a warning once it has opened as a
// database, and an empty file, which bbolt turns into a new database, is
// reported with a warning too.
func OpenBolt(path string, opts *Options) (*Bolt, error) {
	dir := filepath.Dir(path)
	if fi, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("store: open %s: %s is not a directory", path, dir)
	}
	log := opts.logger()
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
	s := &Bolt{db: db, path: path, cap: opts.capacity(), log: log, ackDelay: opts.ackDelay(),
		failed: make(chan struct{})}
	s.routeBytes, s.totalBytes = opts.Bounds()
	if opts != nil {
		s.observe = opts.ObserveCommit
	}
	start := time.Now()
	counts, entries, err := s.prepare()
	if err != nil {
		// After a panic bbolt's state is unknown; the handle is left to
		// the end of the process rather than risk Close.
		if s.failure.Load() == nil {
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
	s.startWriter()
	s.log.Debug("store opened", "db", path, "routes", len(counts), "entries", entries,
		"bytes", s.counts.bytes(), "elapsed", time.Since(start))
	if held := s.counts.bytes(); held > s.totalBytes {
		s.log.Warn("the queues hold more than the total byte bound; sends are refused until receivers make room",
			"bytes", held, "total_bytes", s.totalBytes)
	}
	return s, nil
}

// inspect looks at the file at path before bbolt opens it, under the lock
// bbolt takes, so that no other bus writes it meanwhile: it warns about an
// empty file and checks the rest. A missing file is left for bbolt to
// create, and inspect returns nil for it. Otherwise it returns the file,
// open for reading and unlocked, so that [OpenBolt] can tighten its mode
// once bbolt has opened it; a file it refuses is not changed in any way.
func inspect(path string, log *slog.Logger) (*os.File, error) {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("store: open %s: not a regular file", path)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	if err := check(f, path, log); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// check takes bbolt's lock on f, the file at path, warns when it is empty
// and otherwise checks it page by page (see [checkFile]), then releases
// the lock.
func check(f *os.File, path string, log *slog.Logger) error {
	unlock, ok, err := lockFile(f, lockTimeout)
	if err != nil {
		return fmt.Errorf("store: lock %s: %w", path, err)
	}
	if !ok {
		return fmt.Errorf("%w: %s (waited %v)", ErrLocked, path, lockTimeout)
	}
	defer unlock()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("store: open %s: %w", path, err)
	}
	if fi.Size() == 0 {
		log.Warn("database file is empty; starting a new database in it", "db", path)
		return nil
	}
	if !lockChecks {
		return nil
	}
	err = checkFile(f, fi.Size())
	if ce, ok := errors.AsType[*CorruptError](err); ok {
		ce.Path = path
		return ce
	}
	if err != nil {
		return fmt.Errorf("store: check %s: %w", path, err)
	}
	return nil
}

// tightenOpened tightens the mode of f (see tightenMode) when it is still
// the file at path, the one bbolt opened.
func tightenOpened(f *os.File, path string, log *slog.Logger) {
	fi, err := f.Stat()
	if err != nil {
		return
	}
	if now, err := os.Stat(path); err != nil || !os.SameFile(fi, now) {
		return
	}
	tightenMode(f, path, fi, log)
}

// openGuarded opens the bbolt file at path. A panic in bbolt, or a fault on
// the memory it maps, becomes a *CorruptError (without a path): the file
// was checked, so either means it changed or bbolt trusts something the
// check does not look at. A file handle bbolt left open then stays open
// until the process ends, which it is about to.
func openGuarded(path string) (db *bolt.DB, err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			db, err = nil, &CorruptError{Detail: fmt.Sprintf("bbolt could not read it: %v", r)}
		}
	}()
	return bolt.Open(path, 0o600, &bolt.Options{Timeout: lockTimeout})
}

// prepare creates the buckets when missing and counts the entries and bytes
// of every route with one scan. It writes only when the buckets are missing or the
// stored next_seq is not above every stored sequence (a damaged file), which
// it then raises.
func (s *Bolt) prepare() (counts map[string]routeSize, entries int, err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer s.guard("open", &err)
	var repair bool
	err = s.db.View(func(tx *bolt.Tx) error {
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
	err = s.db.Update(func(tx *bolt.Tx) error {
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
func (s *Bolt) scan(tx *bolt.Tx) (counts map[string]routeSize, entries int, repair bool, err error) {
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
		route, seq, ok := splitKey(string(k))
		if !ok {
			foreign++
			continue
		}
		entries++
		minNext = max(minNext, seq+1)
		size := EntrySize(route, len(v))
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

func readNextSeq(meta *bolt.Bucket) (uint64, error) {
	v := meta.Get(keyNextSeq)
	if v == nil {
		return 0, nil
	}
	if len(v) != 8 {
		return 0, &CorruptError{Detail: fmt.Sprintf("its next sequence number has %d bytes, not 8", len(v))}
	}
	return binary.BigEndian.Uint64(v), nil
}

func writeNextSeq(meta *bolt.Bucket, seq uint64) error {
	return meta.Put(keyNextSeq, binary.BigEndian.AppendUint64(nil, seq))
}

// Enqueue implements [Store.Enqueue]. It returns once the entry is
// committed to disk.
func (s *Bolt) Enqueue(route string, value []byte) (key string, dropped int, err error) {
	if err := s.usable(); err != nil {
		return "", 0, err
	}
	size := EntrySize(route, len(value))
	if size > s.routeBytes {
		return "", 0, &BoundError{Err: ErrTooLarge, Bound: s.routeBytes, Size: size}
	}
	if s.full(route, size) {
		return "", 0, &BoundError{Err: ErrFull, Bound: s.totalBytes, Size: size}
	}
	r := &writeReq{route: route, value: value, done: make(chan struct{})}
	if s.stopping.Load() {
		return "", 0, ErrClosed
	}
	if !s.enqueueInline(r) {
		select {
		case s.writes <- r:
		case <-s.stop:
			return "", 0, ErrClosed
		}
	}
	<-r.done
	if r.err != nil {
		return "", 0, r.err
	}
	return r.key, r.dropped, nil
}

// full reports whether an entry of size cannot fit in the total bytes even
// if every acknowledged entry and every entry of route went, from the
// counts of the last commit. Such an enqueue is refused without a
// transaction, so that sends to a full store cost no commit each; the
// transaction decides every other (see enqueueTx).
func (s *Bolt) full(route string, size int64) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.counts.bytes()-s.ackedBytes-s.counts.committed[route].bytes+size > s.totalBytes
}

// enqueueTx stores value as the newest entry of route in tx and trims the
// route to the cap and the per-route bytes. It returns the new key and the
// keys it dropped, or, with a nil error, a refusal (a *BoundError) when
// the store would hold more than its total bytes; a refused enqueue
// changes nothing in tx. The caller has checked that the entry alone fits
// in a route ([Bolt.Enqueue]).
func (s *Bolt) enqueueTx(tx *bolt.Tx, route string, value []byte) (key string, dropped []string, refused, err error) {
	size := EntrySize(route, len(value))
	meta, msgs := tx.Bucket(bucketMeta), tx.Bucket(bucketMessages)
	// Decide what goes, and whether the entry fits, before writing.
	before := s.counts.inTx(route)
	after := routeSize{before.n + 1, before.bytes + size}
	if after.n > s.cap || after.bytes > s.routeBytes {
		c := msgs.Cursor()
		prefix := []byte(RoutePrefix(route))
		k, v := first(c, prefix)
		for after.n > s.cap || after.bytes > s.routeBytes {
			if k == nil {
				// The cache counted entries that are not there. Trust
				// the data: the entries walked are all the route has,
				// and go; the new entry is the route's only one.
				s.log.Error("entry count out of step with the database; corrected",
					"counted", before.n, "bytes", before.bytes, "cap", s.cap)
				after = routeSize{1, size}
				break
			}
			dropped = append(dropped, string(k))
			after.n--
			after.bytes -= EntrySize(route, len(v))
			k, v = next(c, prefix)
		}
	}
	if s.counts.totalInTx()+after.bytes-before.bytes > s.totalBytes {
		return "", nil, &BoundError{Err: ErrFull, Bound: s.totalBytes, Size: size}, nil
	}
	seq, err := readNextSeq(meta)
	if err != nil {
		return "", nil, nil, err
	}
	if err := writeNextSeq(meta, seq+1); err != nil {
		return "", nil, nil, err
	}
	key = Key(route, seq)
	if err := msgs.Put([]byte(key), value); err != nil {
		return "", nil, nil, err
	}
	for _, k := range dropped {
		if err := msgs.Delete([]byte(k)); err != nil {
			return "", nil, nil, err
		}
	}
	s.counts.add(route, after.n-before.n, after.bytes-before.bytes)
	return key, dropped, nil, nil
}

// first positions c on the oldest entry of the route whose prefix is given
// and returns it, or a nil key if the route has none. Keys of longer routes
// that share the prefix (possible only if routes contain NUL) are skipped:
// a key of this route is exactly the prefix plus the sequence digits.
func first(c *bolt.Cursor, prefix []byte) (key, value []byte) {
	k, v := c.Seek(prefix)
	return inRoute(c, prefix, k, v)
}

// next moves c to the route's entry after the current one and returns it,
// or a nil key when there is none; see [first].
func next(c *bolt.Cursor, prefix []byte) (key, value []byte) {
	k, v := c.Next()
	return inRoute(c, prefix, k, v)
}

// inRoute returns k and v if k is a key of the route whose prefix is
// given, or else the first such key after it, or nil.
func inRoute(c *bolt.Cursor, prefix, k, v []byte) (key, value []byte) {
	for ; k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		if len(k) == len(prefix)+seqDigits {
			return k, v
		}
	}
	return nil, nil
}

// Peek implements [Store.Peek]: the oldest entry of route that is not
// acknowledged. The returned entry is copied out of the read transaction.
func (s *Bolt) Peek(route string) (e Entry, ok bool, err error) {
	if err := s.usable(); err != nil {
		return Entry{}, false, err
	}
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer s.guard("peek", &err)
	// Holding mu across the transaction keeps the writer from forgetting
	// an acknowledged key between the moment the transaction starts (and
	// may still see the entry) and the moment the key is looked up: the
	// writer forgets a key only after the commit that deleted it, and only
	// with mu held for writing.
	s.mu.RLock()
	defer s.mu.RUnlock()
	skip := s.ackedN[route] > 0
	err = s.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketMessages).Cursor()
		prefix := []byte(RoutePrefix(route))
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			if len(k) != len(prefix)+seqDigits {
				continue
			}
			if skip {
				if _, acked := s.acked[string(k)]; acked {
					continue
				}
			}
			e, ok = Entry{Key: string(k), Value: bytes.Clone(v)}, true
			return nil
		}
		return nil
	})
	if err != nil {
		return Entry{}, false, s.wrap("peek", err)
	}
	return e, ok, nil
}

// Delete implements [Store.Delete]. It returns before the deletion is
// committed: the entry is marked acknowledged at once, so Peek and Depth
// no longer see it, and the writer deletes it with its next commit (see
// [Bolt]). Deleting a key that is not stored, or again, changes nothing.
func (s *Bolt) Delete(key string) (err error) {
	if err := s.usable(); err != nil {
		return err
	}
	route, _, ok := splitKey(key)
	if !ok {
		return nil
	}
	n, err := s.markAcked(key, route)
	if err != nil {
		return s.wrap("delete", err)
	}
	if n == 0 {
		return nil
	}
	// While the writer's timer runs it needs no word; it is cleared
	// before the writer looks for acknowledgements once more, so none is
	// left waiting unseen.
	if !s.armed.Load() || n >= s.ackFlushAt {
		select {
		case s.kick <- struct{}{}:
		default:
		}
	}
	if n >= s.maxAcked {
		// Too many waiting: commit them before answering, which
		// bounds the memory acknowledgements take.
		return s.flush()
	}
	return nil
}

// markAcked records key, of route, as acknowledged if it is stored and not
// acknowledged yet. It returns the number of acknowledged keys then waiting,
// or 0 when it recorded nothing.
func (s *Bolt) markAcked(key, route string) (n int, err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer s.guard("delete", &err)
	// The lookup and the record happen under mu, so the writer cannot
	// apply a commit in between. A commit that dropped the key and is not
	// applied yet is noticed when it is: see Bolt.apply.
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, dup := s.acked[key]; dup {
		return 0, nil
	}
	var (
		stored bool
		size   int64
	)
	err = s.db.View(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketMessages).Get([]byte(key))
		stored, size = v != nil, EntrySize(route, len(v))
		return nil
	})
	if err != nil || !stored {
		return 0, err
	}
	s.acked[key] = size
	s.ackedN[route]++
	s.ackedBytes += size
	return len(s.acked), nil
}

// Depth implements [Store.Depth] from the cached counts, less the
// acknowledged entries whose delete is not committed yet.
func (s *Bolt) Depth(route string) (int, error) {
	if err := s.usable(); err != nil {
		return 0, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.counts.depth(route) - s.ackedN[route], nil
}

// Close implements [Store.Close]: it waits for the writes in progress,
// commits the acknowledgements still waiting, and closes the file,
// releasing its lock. Calling it again returns [ErrClosed].
//
// A store found damaged (see [Bolt.Failed]) is not closed: after a panic in
// bbolt its locks may still be held, and closing could hang. Close then
// returns the failure, and the file and its lock stay open until the
// process ends.
func (s *Bolt) Close() error {
	if s.closed.Swap(true) {
		return ErrClosed
	}
	s.stopping.Store(true)
	close(s.stop)
	<-s.writerDone
	// An inline enqueue that began before stopping was set may still be
	// writing; the lock waits for it.
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if ce := s.failure.Load(); ce != nil {
		return ce
	}
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("store: close: %w", err)
	}
	return nil
}

// wrap adds context to an error from bbolt, turning the error for a closed
// database (a call racing with Close) into ErrClosed. A *CorruptError
// marks the store failed and is returned as it is.
func (s *Bolt) wrap(op string, err error) error {
	if ce, ok := errors.AsType[*CorruptError](err); ok {
		ce.Path = s.path
		s.fail(ce)
		return ce
	}
	if errors.Is(err, berrors.ErrDatabaseNotOpen) {
		return ErrClosed
	}
	return fmt.Errorf("store: %s: %w", op, err)
}

// usable returns ErrClosed after Close, the failure after the file was
// found damaged, and nil otherwise.
func (s *Bolt) usable() error {
	if s.closed.Load() {
		return ErrClosed
	}
	if ce := s.failure.Load(); ce != nil {
		return ce
	}
	return nil
}

// guard is deferred by every operation that reads the mapped file, after
// debug.SetPanicOnFault(true). The file was checked when it opened, so a
// panic in bbolt, or a fault on memory past the end of a file that shrank,
// means the file changed under the bus; the operation then fails with a
// *CorruptError and the store stops touching the file.
func (s *Bolt) guard(op string, err *error) {
	r := recover()
	if r == nil {
		return
	}
	ce := &CorruptError{Path: s.path, Detail: fmt.Sprintf("%s failed: %v", op, r)}
	s.fail(ce)
	*err = ce
}

// fail records the first failure and closes Failed.
func (s *Bolt) fail(ce *CorruptError) {
	s.failOnce.Do(func() {
		s.failure.Store(ce)
		close(s.failed)
	})
}

// Failed returns a channel that is closed when an operation finds the
// database file damaged. From then on every method returns that
// *CorruptError, also from [Bolt.Err]; the bus should stop, since the file
// needs its operator.
func (s *Bolt) Failed() <-chan struct{} { return s.failed }

// Err returns the *CorruptError that closed [Bolt.Failed], or nil.
func (s *Bolt) Err() error {
	if ce := s.failure.Load(); ce != nil {
		return ce
	}
	return nil
}
