package bolt

import (
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/interlink-go/interlink/internal/store"
)

const (
	// defaultMaxAcked bounds the acknowledgements waiting for a commit. A
	// Delete that finds this many waiting commits them before it returns.
	defaultMaxAcked = 16384
	// defaultAckFlushAt is the number of waiting acknowledgements at which
	// the writer commits them without waiting for AckDelay.
	defaultAckFlushAt = 1024
	// maxBatch bounds the enqueues that share one commit.
	maxBatch = 1024
)

// Enqueue implements [store.Store.Enqueue]. It returns once the entry is
// committed to disk.
func (s *Store) Enqueue(route string, value []byte) (key string, dropped int, err error) {
	if err := s.usable(); err != nil {
		return "", 0, err
	}
	size := store.EntrySize(route, len(value))
	if size > s.routeBytes {
		return "", 0, &store.BoundError{Err: store.ErrTooLarge, Bound: s.routeBytes, Size: size}
	}
	if s.full(route, size) {
		return "", 0, &store.BoundError{Err: store.ErrFull, Bound: s.totalBytes, Size: size}
	}
	return s.w.enqueue(&writeReq{route: route, value: value, done: make(chan struct{})})
}

// writeReq is one enqueue handed to the writer. The writer sets key,
// dropped and err, then closes done.
type writeReq struct {
	route string
	value []byte

	key     string
	dropped int
	err     error
	done    chan struct{}
}

// writer makes every write transaction of a [Store]: the enqueues, each
// with the acknowledgements waiting, and the acknowledgements on their
// own. Its goroutine batches the enqueues that wait; an enqueue that finds
// no commit in progress writes its own transaction (see inline).
type writer struct {
	s        *Store              // the store it writes; fixed at start
	ackDelay time.Duration       // fixed at start
	observe  func(time.Duration) // Options.ObserveCommit; fixed at start, may be nil

	// The bounds of the acknowledgements waiting, fixed at start (tests
	// lower them before first use): see defaultMaxAcked and
	// defaultAckFlushAt.
	maxAcked, ackFlushAt int

	// wmu is held by whoever writes a transaction: the writer goroutine,
	// or an Enqueue that found no commit in progress and writes its own
	// (see inline). The counts' delta belongs to its holder.
	wmu sync.Mutex
	// stopping is set by close before it stops the goroutine; an Enqueue
	// that sees it returns store.ErrClosed rather than write.
	stopping atomic.Bool

	// The goroutine's inbox. writes is unbuffered: an enqueue blocks until
	// the goroutine takes it, or gives up when stop is closed.
	writes  chan *writeReq
	kick    chan struct{}   // capacity 1: acknowledgements are waiting
	armed   atomic.Bool     // the timer for acknowledgements runs
	flushes chan chan error // requests to commit the acknowledgements now
	stop    chan struct{}   // closed by close
	done    chan struct{}   // closed when the goroutine has returned
}

// start starts the writer's goroutine for s; close stops it.
func (w *writer) start(s *Store, ackDelay time.Duration, observe func(time.Duration)) {
	w.s, w.ackDelay, w.observe = s, ackDelay, observe
	w.maxAcked, w.ackFlushAt = defaultMaxAcked, defaultAckFlushAt
	w.writes = make(chan *writeReq)
	w.kick = make(chan struct{}, 1)
	w.flushes = make(chan chan error)
	w.stop = make(chan struct{})
	w.done = make(chan struct{})
	go w.run()
}

// close stops the goroutine once it has committed what waits, and waits for
// an inline enqueue still writing. It returns holding the write lock, and
// the function that releases it.
func (w *writer) close() (unlock func()) {
	w.stopping.Store(true)
	close(w.stop)
	<-w.done
	// An inline enqueue that began before stopping was set may still be
	// writing; the lock waits for it.
	w.wmu.Lock()
	return w.wmu.Unlock
}

// enqueue writes r, in the calling goroutine when no commit is in
// progress and otherwise in the next batch, and returns its result.
func (w *writer) enqueue(r *writeReq) (key string, dropped int, err error) {
	if w.stopping.Load() {
		return "", 0, store.ErrClosed
	}
	if !w.inline(r) {
		select {
		case w.writes <- r:
		case <-w.stop:
			return "", 0, store.ErrClosed
		}
	}
	<-r.done
	if r.err != nil {
		return "", 0, r.err
	}
	return r.key, r.dropped, nil
}

// inline commits r in the calling goroutine when no commit is in
// progress, which spares a lone sender the hand-over to the goroutine and
// back. It reports false, having done nothing, when another commit holds
// the write lock; r then goes to the goroutine, which batches it with the
// others that wait.
func (w *writer) inline(r *writeReq) bool {
	if !w.wmu.TryLock() {
		return false
	}
	defer w.wmu.Unlock()
	w.commit([]*writeReq{r})
	return true
}

// acknowledged tells the writer that n acknowledgements wait, after
// Delete added one. Past maxAcked it commits them before it returns,
// which bounds the memory acknowledgements take.
func (w *writer) acknowledged(n int) error {
	// While the timer runs the goroutine needs no word; it is cleared
	// before the goroutine looks for acknowledgements once more, so none
	// is left waiting unseen.
	if !w.armed.Load() || n >= w.ackFlushAt {
		select {
		case w.kick <- struct{}{}:
		default:
		}
	}
	if n >= w.maxAcked {
		return w.flush()
	}
	return nil
}

// flush commits the acknowledgements waiting and returns when they are on
// disk.
func (w *writer) flush() error {
	ch := make(chan error, 1)
	select {
	case w.flushes <- ch:
	case <-w.stop:
		return store.ErrClosed
	}
	return <-ch
}

// run is the writer's goroutine: it takes the enqueues waiting (as many as
// have arrived, up to maxBatch) and the acknowledged keys, writes them in
// one transaction, and answers the enqueues once it has committed. With
// only acknowledgements waiting it waits up to ackDelay for an enqueue to
// carry them, and commits them on their own after that. When stop is
// closed it commits what is waiting and returns.
func (w *writer) run() {
	defer close(w.done)
	var (
		timer   *time.Timer
		timerC  <-chan time.Time
		batch   []*writeReq
		flushes []chan error
	)
	disarm := func() {
		if timerC != nil {
			timer.Stop()
			timerC = nil
		}
		w.armed.Store(false)
	}
	for {
		batch, flushes = batch[:0], flushes[:0]
		stopping := false
		select {
		case r := <-w.writes:
			batch = append(batch, r)
		case <-w.kick:
			if w.ackDelay > 0 && w.ackedLen() < w.ackFlushAt {
				if timerC == nil {
					if timer == nil {
						timer = time.NewTimer(w.ackDelay)
					} else {
						timer.Reset(w.ackDelay)
					}
					timerC = timer.C
					w.armed.Store(true)
				}
				continue
			}
		case <-timerC:
			timerC = nil
			w.armed.Store(false)
		case ch := <-w.flushes:
			flushes = append(flushes, ch)
		case <-w.stop:
			stopping = true
		}
	gather:
		for len(batch) < maxBatch {
			select {
			case r := <-w.writes:
				batch = append(batch, r)
			case ch := <-w.flushes:
				flushes = append(flushes, ch)
			default:
				break gather
			}
		}
		w.wmu.Lock()
		err := w.commit(batch)
		w.wmu.Unlock()
		for _, ch := range flushes {
			ch <- err
		}
		disarm()
		if stopping {
			return
		}
		if w.ackedLen() > 0 {
			// Acknowledged during the commit: they wait like any other.
			select {
			case w.kick <- struct{}{}:
			default:
			}
		}
	}
}

// ackedLen returns the number of acknowledgements waiting.
func (w *writer) ackedLen() int {
	w.s.mu.RLock()
	defer w.s.mu.RUnlock()
	return w.s.acks.len()
}

// commit writes batch and every acknowledgement waiting in one transaction,
// and answers the enqueues of batch. The caller holds wmu. If that
// transaction fails with more than one enqueue in it, each enqueue is tried
// again on its own, so that one request's error does not fail the others.
// It returns the error of the acknowledgements' transaction, if any; they
// stay waiting then.
func (w *writer) commit(batch []*writeReq) error {
	if err := w.s.usable(); err != nil && err != store.ErrClosed {
		answer(batch, err)
		return err
	}
	w.s.mu.RLock()
	keys := w.s.acks.keys()
	w.s.mu.RUnlock()
	if len(batch) == 0 && len(keys) == 0 {
		return nil
	}
	err := w.write(batch, keys)
	if err == nil {
		return nil
	}
	if len(batch) <= 1 {
		answer(batch, err)
		return err
	}
	for i, r := range batch {
		var k []string
		if i == 0 {
			k = keys
		}
		if rerr := w.write([]*writeReq{r}, k); rerr != nil {
			answer([]*writeReq{r}, rerr)
			if i == 0 {
				err = rerr
			}
		} else if i == 0 {
			err = nil
		}
	}
	return err
}

// answer fails every request of batch with err.
func answer(batch []*writeReq, err error) {
	for _, r := range batch {
		r.err = err
		close(r.done)
	}
}

// dropRecord is what one enqueue of a transaction dropped.
type dropRecord struct {
	req  *writeReq
	keys []string
}

// write runs one transaction: it deletes the acknowledged keys, then
// stores the entries of batch in order. After the commit it applies the
// counts, forgets the acknowledged keys it deleted, and answers batch. On
// failure it changes nothing and answers nobody.
func (w *writer) write(batch []*writeReq, keys []string) (err error) {
	s := w.s
	var drops []dropRecord
	start := time.Now()
	err = w.guardedUpdate(func(tx *bbolt.Tx) error {
		drops = drops[:0]
		if len(keys) > 0 {
			c := tx.Bucket(bucketMessages).Cursor()
			for _, k := range keys {
				kb := []byte(k)
				got, v := c.Seek(kb)
				if string(got) != k {
					continue
				}
				route, _, _ := store.ParseKey(k)
				size := store.EntrySize(route, len(v))
				if err := c.Delete(); err != nil {
					return err
				}
				s.counts.add(route, -1, -size)
			}
		}
		for _, r := range batch {
			// An earlier attempt of this request may have set these.
			r.key, r.dropped, r.err = "", 0, nil
			key, dropped, refused, err := w.enqueueTx(tx, r.route, r.value)
			if err != nil {
				return err
			}
			if refused != nil {
				r.err = refused
				continue
			}
			r.key, r.dropped = key, len(dropped)
			if len(dropped) > 0 {
				drops = append(drops, dropRecord{r, dropped})
			}
		}
		return nil
	})
	if err != nil {
		s.counts.discard()
		return s.wrap("write", err)
	}
	if w.observe != nil {
		w.observe(time.Since(start))
	}
	w.apply(keys, drops)
	for _, r := range batch {
		close(r.done)
	}
	return nil
}

// apply makes a committed transaction visible: the counts, and the
// acknowledged keys it deleted, which Peek no longer needs to skip. A key
// acknowledged while the transaction ran and dropped by its cap is gone as
// well; since it was acknowledged, its drop is not reported.
func (w *writer) apply(keys []string, drops []dropRecord) {
	s := w.s
	s.mu.Lock()
	defer s.mu.Unlock()
	s.counts.apply()
	for _, k := range keys {
		s.acks.forget(k)
	}
	for _, d := range drops {
		for _, k := range d.keys {
			if s.acks.forget(k) {
				d.req.dropped--
			}
		}
	}
}

// guardedUpdate runs fn in a write transaction. A panic in bbolt, or a fault
// on its mapped file, becomes a *CorruptError: the writer is the store's
// own goroutine, where a panic would otherwise end the process.
func (w *writer) guardedUpdate(fn func(*bbolt.Tx) error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			err = &CorruptError{Path: w.s.path, Detail: fmt.Sprintf("a write failed: %v", r)}
		}
	}()
	return w.s.db.Update(fn)
}

// enqueueTx stores value as the newest entry of route in tx and trims the
// route to the cap and the per-route bytes. It returns the new key and the
// keys it dropped, or, with a nil error, a refusal (a *store.BoundError) when
// the store would hold more than its total bytes; a refused enqueue
// changes nothing in tx. The caller has checked that the entry alone fits
// in a route ([Store.Enqueue]).
func (w *writer) enqueueTx(tx *bbolt.Tx, route string, value []byte) (key string, dropped []string, refused, err error) {
	s := w.s
	size := store.EntrySize(route, len(value))
	meta, msgs := tx.Bucket(bucketMeta), tx.Bucket(bucketMessages)
	// Decide what goes, and whether the entry fits, before writing.
	before := s.counts.inTx(route)
	after := routeSize{before.n + 1, before.bytes + size}
	if after.n > s.cap || after.bytes > s.routeBytes {
		c := msgs.Cursor()
		prefix := []byte(store.RoutePrefix(route))
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
			after.bytes -= store.EntrySize(route, len(v))
			k, v = next(c, prefix)
		}
	}
	if s.counts.totalInTx()+after.bytes-before.bytes > s.totalBytes {
		return "", nil, &store.BoundError{Err: store.ErrFull, Bound: s.totalBytes, Size: size}, nil
	}
	seq, err := readNextSeq(meta)
	if err != nil {
		return "", nil, nil, err
	}
	if err := writeNextSeq(meta, seq+1); err != nil {
		return "", nil, nil, err
	}
	key = store.Key(route, seq)
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
