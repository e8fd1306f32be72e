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
	// batchDelay is how long a batch of concurrent writes waits for more
	// to join before it commits (bbolt's default is 10 ms). A commit costs
	// two fsyncs; waiting about that long lets the next batch fill while the
	// current one writes, without making a lone writer wait much.
	batchDelay = 2 * time.Millisecond
	// lockRetry is how often a lock held by another process is tried
	// again, as bbolt does.
	lockRetry = 50 * time.Millisecond
)

// Bolt is a [Store] kept in a bbolt database file, so queues and the
// sequence survive restarts. Every write commits with fsync before it
// returns: when [Bolt.Enqueue] returns without error, the entry is on disk.
//
// Enqueue is one transaction that takes the next sequence number, stores
// the entry and drops the oldest entries of the route while it holds more
// than the cap, so a crash never leaves a queue over the cap because of a
// half-done send. A cap lowered between runs is enforced lazily: a queue
// keeps its excess until the next enqueue to it trims it.
//
// Enqueue and [Bolt.Delete] are write transactions. Writes that overlap,
// enqueues and deletes alike, share transactions through [bolt.DB.Batch], and
// with them the cost of the fsync; a lone write commits at once instead of
// waiting for company. Either way the call returns only after the commit.
// Peek reads in a read-only transaction and copies the entry out of it.
//
// The number of entries per route is cached in memory, so enqueue and
// [Bolt.Depth] need not count a queue. [OpenBolt] builds the cache with one
// scan of every key, which makes opening linear in the number of stored
// entries.
type Bolt struct {
	db     *bolt.DB     // fixed at open
	path   string       // fixed at open
	cap    int          // fixed at open
	log    *slog.Logger // fixed at open
	counts *routeCounts // has its own lock
	// observe is Options.ObserveCommit; fixed at open, may be nil.
	observe func(time.Duration)

	// failed is closed, and failure set, when an operation finds the file
	// damaged; every operation after that returns failure.
	failed   chan struct{}
	failure  atomic.Pointer[CorruptError]
	failOnce sync.Once

	closed   atomic.Bool
	inflight atomic.Int64 // writes in progress; more than one means use Batch

	// alwaysBatch makes every write go through Batch; tests set it to
	// exercise batches, benchmarks to compare with the lone-write
	// shortcut. Set only before first use.
	alwaysBatch bool
}

var _ Store = (*Bolt)(nil)

// OpenBolt opens the database at path, creating the file (mode 0600) if it
// does not exist. The directory must exist already. If another process holds
// the file, OpenBolt gives up after about a second with an error wrapping
// [ErrLocked]. It uses opts.Cap and opts.Logger.
//
// An existing file is checked before bbolt reads it (see [checkFile]): a
// file that is damaged, cut short or not a database gives a
// [*CorruptError] instead of a crash. A file other users can read is made
// private (mode 0600) with a warning, and an empty file, which bbolt turns
// into a new database, is reported with a warning too.
func OpenBolt(path string, opts *Options) (*Bolt, error) {
	dir := filepath.Dir(path)
	if fi, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("store: open %s: %s is not a directory", path, dir)
	}
	log := opts.logger()
	if err := inspect(path, log); err != nil {
		return nil, err
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
	db.MaxBatchDelay = batchDelay

	s := &Bolt{db: db, path: path, cap: opts.capacity(), log: log, failed: make(chan struct{})}
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
	s.log.Debug("store opened", "db", path, "routes", len(counts), "entries", entries,
		"elapsed", time.Since(start))
	return s, nil
}

// inspect looks at the file at path before bbolt opens it, under the lock
// bbolt takes, so that no other bus writes it meanwhile: it tightens the
// file's mode, warns about an empty file and checks the rest. A missing
// file is left for bbolt to create.
func inspect(path string, log *slog.Logger) error {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("store: open %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("store: open %s: not a regular file", path)
	}
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("store: open %s: %w", path, err)
	}
	defer f.Close()
	unlock, ok, err := lockFile(f, lockTimeout)
	if err != nil {
		return fmt.Errorf("store: lock %s: %w", path, err)
	}
	if !ok {
		return fmt.Errorf("%w: %s (waited %v)", ErrLocked, path, lockTimeout)
	}
	defer unlock()
	if fi, err = f.Stat(); err != nil {
		return fmt.Errorf("store: open %s: %w", path, err)
	}
	tightenMode(f, path, fi, log)
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

// prepare creates the buckets when missing and counts the entries of every
// route with one scan. It writes only when the buckets are missing or the
// stored next_seq is not above every stored sequence (a damaged file), which
// it then raises.
func (s *Bolt) prepare() (counts map[string]int, entries int, err error) {
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

// scan counts every route's entries. It reports whether next_seq is not
// above every stored sequence, and in a writable transaction it raises it.
func (s *Bolt) scan(tx *bolt.Tx) (counts map[string]int, entries int, repair bool, err error) {
	meta := tx.Bucket(bucketMeta)
	next, err := readNextSeq(meta)
	if err != nil {
		return nil, 0, false, err
	}
	counts = make(map[string]int)
	var (
		foreign int    // keys the store did not make; never served
		minNext uint64 // one more than the highest stored sequence
		run     string // route of the current run of keys
		runN    int
	)
	c := tx.Bucket(bucketMessages).Cursor()
	for k, _ := c.First(); k != nil; k, _ = c.Next() {
		route, seq, ok := splitKey(string(k))
		if !ok {
			foreign++
			continue
		}
		entries++
		minNext = max(minNext, seq+1)
		// Keys of one route are adjacent, so count runs and touch the
		// map once per route.
		if runN > 0 && route == run {
			runN++
			continue
		}
		if runN > 0 {
			counts[run] += runN
		}
		run, runN = strings.Clone(route), 1
	}
	if runN > 0 {
		counts[run] += runN
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

// Enqueue implements [Store.Enqueue].
func (s *Bolt) Enqueue(route string, value []byte) (key string, dropped int, err error) {
	if err := s.usable(); err != nil {
		return "", 0, err
	}
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer s.guard("enqueue", &err)
	// The function may run more than once (Batch retries); only the run in
	// the transaction that committed sets the results we return.
	err = s.update(func(tx *bolt.Tx) error {
		var err error
		key, dropped, err = s.enqueueTx(tx, route, value)
		return err
	})
	if err != nil {
		return "", 0, s.wrap("enqueue", err)
	}
	return key, dropped, nil
}

func (s *Bolt) enqueueTx(tx *bolt.Tx, route string, value []byte) (string, int, error) {
	s.counts.begin(tx)
	meta, msgs := tx.Bucket(bucketMeta), tx.Bucket(bucketMessages)
	seq, err := readNextSeq(meta)
	if err != nil {
		return "", 0, err
	}
	if err := writeNextSeq(meta, seq+1); err != nil {
		return "", 0, err
	}
	key := Key(route, seq)
	kb := []byte(key)
	if err := msgs.Put(kb, value); err != nil {
		return "", 0, err
	}
	before := s.counts.inTx(route)
	after := before + 1
	dropped := 0
	if after > s.cap {
		c := msgs.Cursor()
		prefix := []byte(RoutePrefix(route))
		for after > s.cap {
			k, _ := first(c, prefix)
			if k == nil || bytes.Equal(k, kb) {
				// The cache counted entries that are not there. Trust
				// the data: the new entry is the route's only one.
				s.log.Error("entry count out of step with the database; corrected",
					"counted", before, "cap", s.cap)
				after = 1
				break
			}
			if err := c.Delete(); err != nil {
				return "", 0, err
			}
			after--
			dropped++
		}
	}
	s.counts.add(route, after-before)
	return key, dropped, nil
}

// first positions c on the oldest entry of the route whose prefix is given
// and returns it, or a nil key if the route has none. Keys of longer routes
// that share the prefix (possible only if routes contain NUL) are skipped:
// a key of this route is exactly the prefix plus the sequence digits.
func first(c *bolt.Cursor, prefix []byte) (key, value []byte) {
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		if len(k) == len(prefix)+seqDigits {
			return k, v
		}
	}
	return nil, nil
}

// Peek implements [Store.Peek]. The returned entry is copied out of the
// read transaction.
func (s *Bolt) Peek(route string) (e Entry, ok bool, err error) {
	if err := s.usable(); err != nil {
		return Entry{}, false, err
	}
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer s.guard("peek", &err)
	err = s.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketMessages).Cursor()
		if k, v := first(c, []byte(RoutePrefix(route))); k != nil {
			e, ok = Entry{Key: string(k), Value: bytes.Clone(v)}, true
		}
		return nil
	})
	if err != nil {
		return Entry{}, false, s.wrap("peek", err)
	}
	return e, ok, nil
}

// Delete implements [Store.Delete]. It returns once the deletion is on
// disk. Deleting a key that is not stored changes nothing; when no other
// write is in progress it also commits nothing.
func (s *Bolt) Delete(key string) (err error) {
	if err := s.usable(); err != nil {
		return err
	}
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer s.guard("delete", &err)
	route, _, ok := splitKey(key)
	if !ok {
		return nil
	}
	kb := []byte(key)
	err = s.update(func(tx *bolt.Tx) error {
		s.counts.begin(tx)
		c := tx.Bucket(bucketMessages).Cursor()
		if k, _ := c.Seek(kb); !bytes.Equal(k, kb) {
			return errNoChange
		}
		if err := c.Delete(); err != nil {
			return err
		}
		s.counts.add(route, -1)
		return nil
	})
	if err != nil {
		return s.wrap("delete", err)
	}
	return nil
}

// errNoChange is what a write function returns when it found nothing to
// change; see [Bolt.update].
var errNoChange = errors.New("no change")

// update runs fn in a write transaction and returns once that transaction
// has committed. If no other write is in progress, fn gets a transaction of
// its own ([bolt.DB.Update]), so a lone write does not wait for company.
// Otherwise it joins a [bolt.DB.Batch] and shares the commit, and its fsync,
// with the writes that overlap it. In a batch fn may run more than once,
// each earlier run rolled back, so it must set its results on every run and
// call routeCounts.begin, as every write function must.
//
// fn returns errNoChange when it has nothing to write. On its own, the
// transaction then rolls back, which saves the fsync. In a batch the
// function counts as done, so the others' changes still commit; any other
// error would make bbolt roll the batch back and run the rest again. update
// reports errNoChange as nil.
func (s *Bolt) update(fn func(*bolt.Tx) error) error {
	var err error
	start := time.Now()
	if s.inflight.Add(1) > 1 || s.alwaysBatch {
		err = s.db.Batch(func(tx *bolt.Tx) (err error) {
			// A batch may run in a goroutine of bbolt's, where a panic
			// would end the process; the caller's own guard does not
			// reach it.
			defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
			defer func() {
				if r := recover(); r != nil {
					err = &CorruptError{Path: s.path, Detail: fmt.Sprintf("a write failed: %v", r)}
				}
			}()
			if err := fn(tx); err != errNoChange {
				return err
			}
			return nil
		})
	} else {
		err = s.db.Update(fn)
	}
	s.inflight.Add(-1)
	if err == errNoChange {
		return nil
	}
	if err == nil && s.observe != nil {
		s.observe(time.Since(start))
	}
	return err
}

// Depth implements [Store.Depth] from the cached counts.
func (s *Bolt) Depth(route string) (int, error) {
	if err := s.usable(); err != nil {
		return 0, err
	}
	return s.counts.depth(route), nil
}

// Close implements [Store.Close]: it waits for transactions in progress and
// closes the file, releasing its lock. Calling it again returns [ErrClosed].
func (s *Bolt) Close() error {
	if s.closed.Swap(true) {
		return ErrClosed
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
