package store

import (
	"fmt"
	"runtime/debug"
	"time"

	bolt "go.etcd.io/bbolt"
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

// enqueueInline commits r in the calling goroutine when no commit is in
// progress, which spares a lone sender the hand-over to the writer and
// back. It reports false, having done nothing, when another commit holds
// the write lock; r then goes to the writer, which batches it with the
// others that wait.
func (s *Bolt) enqueueInline(r *writeReq) bool {
	if !s.wmu.TryLock() {
		return false
	}
	defer s.wmu.Unlock()
	s.commit([]*writeReq{r})
	return true
}

// startWriter starts the writer goroutine; Close stops it.
func (s *Bolt) startWriter() {
	s.maxAcked, s.ackFlushAt = defaultMaxAcked, defaultAckFlushAt
	s.acked = make(map[string]int64)
	s.ackedN = make(map[string]int)
	s.writes = make(chan *writeReq)
	s.kick = make(chan struct{}, 1)
	s.flushes = make(chan chan error)
	s.stop = make(chan struct{})
	s.writerDone = make(chan struct{})
	go s.writer()
}

// flush commits the acknowledgements waiting and returns when they are on
// disk.
func (s *Bolt) flush() error {
	ch := make(chan error, 1)
	select {
	case s.flushes <- ch:
	case <-s.stop:
		return ErrClosed
	}
	return <-ch
}

// writer makes every write transaction of the store: it takes the enqueues
// waiting (as many as have arrived, up to maxBatch) and the acknowledged
// keys, writes them in one transaction, and answers the enqueues once it
// has committed. With only acknowledgements waiting it waits up to
// ackDelay for an enqueue to carry them, and commits them on their own
// after that. When stop is closed it commits what is waiting and returns.
func (s *Bolt) writer() {
	defer close(s.writerDone)
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
		s.armed.Store(false)
	}
	for {
		batch, flushes = batch[:0], flushes[:0]
		stopping := false
		select {
		case r := <-s.writes:
			batch = append(batch, r)
		case <-s.kick:
			if s.ackDelay > 0 && s.ackedLen() < s.ackFlushAt {
				if timerC == nil {
					if timer == nil {
						timer = time.NewTimer(s.ackDelay)
					} else {
						timer.Reset(s.ackDelay)
					}
					timerC = timer.C
					s.armed.Store(true)
				}
				continue
			}
		case <-timerC:
			timerC = nil
			s.armed.Store(false)
		case ch := <-s.flushes:
			flushes = append(flushes, ch)
		case <-s.stop:
			stopping = true
		}
	gather:
		for len(batch) < maxBatch {
			select {
			case r := <-s.writes:
				batch = append(batch, r)
			case ch := <-s.flushes:
				flushes = append(flushes, ch)
			default:
				break gather
			}
		}
		s.wmu.Lock()
		err := s.commit(batch)
		s.wmu.Unlock()
		for _, ch := range flushes {
			ch <- err
		}
		disarm()
		if stopping {
			return
		}
		if s.ackedLen() > 0 {
			// Acknowledged during the commit: they wait like any other.
			select {
			case s.kick <- struct{}{}:
			default:
			}
		}
	}
}

// ackedLen returns the number of acknowledgements waiting.
func (s *Bolt) ackedLen() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.acked)
}

// commit writes batch and every acknowledgement waiting in one transaction,
// and answers the enqueues of batch. The caller holds s.wmu. If that transaction fails with more
// than one enqueue in it, each enqueue is tried again on its own, so that
// one request's error does not fail the others. It returns the error of
// the acknowledgements' transaction, if any; they stay waiting then.
func (s *Bolt) commit(batch []*writeReq) error {
	if err := s.usable(); err != nil && err != ErrClosed {
		s.answer(batch, err)
		return err
	}
	s.mu.RLock()
	keys := make([]string, 0, len(s.acked))
	for k := range s.acked {
		keys = append(keys, k)
	}
	s.mu.RUnlock()
	if len(batch) == 0 && len(keys) == 0 {
		return nil
	}
	err := s.write(batch, keys)
	if err == nil {
		return nil
	}
	if len(batch) <= 1 {
		s.answer(batch, err)
		return err
	}
	for i, r := range batch {
		var k []string
		if i == 0 {
			k = keys
		}
		if rerr := s.write([]*writeReq{r}, k); rerr != nil {
			s.answer([]*writeReq{r}, rerr)
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
func (s *Bolt) answer(batch []*writeReq, err error) {
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
func (s *Bolt) write(batch []*writeReq, keys []string) (err error) {
	var drops []dropRecord
	start := time.Now()
	err = s.guardedUpdate(func(tx *bolt.Tx) error {
		drops = drops[:0]
		if len(keys) > 0 {
			c := tx.Bucket(bucketMessages).Cursor()
			for _, k := range keys {
				kb := []byte(k)
				got, v := c.Seek(kb)
				if string(got) != k {
					continue
				}
				route, _, _ := splitKey(k)
				size := EntrySize(route, len(v))
				if err := c.Delete(); err != nil {
					return err
				}
				s.counts.add(route, -1, -size)
			}
		}
		for _, r := range batch {
			// An earlier attempt of this request may have set these.
			r.key, r.dropped, r.err = "", 0, nil
			key, dropped, refused, err := s.enqueueTx(tx, r.route, r.value)
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
	if s.observe != nil {
		s.observe(time.Since(start))
	}
	s.apply(keys, drops)
	for _, r := range batch {
		close(r.done)
	}
	return nil
}

// apply makes a committed transaction visible: the counts, and the
// acknowledged keys it deleted, which Peek no longer needs to skip. A key
// acknowledged while the transaction ran and dropped by its cap is gone as
// well; since it was acknowledged, its drop is not reported.
func (s *Bolt) apply(keys []string, drops []dropRecord) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.counts.apply()
	for _, k := range keys {
		s.forgetLocked(k)
	}
	for _, d := range drops {
		for _, k := range d.keys {
			if s.forgetLocked(k) {
				d.req.dropped--
			}
		}
	}
}

// forgetLocked removes k from the acknowledged keys and reports whether it
// was one. s.mu must be held for writing.
func (s *Bolt) forgetLocked(k string) bool {
	size, ok := s.acked[k]
	if !ok {
		return false
	}
	delete(s.acked, k)
	s.ackedBytes -= size
	route, _, _ := splitKey(k)
	if n := s.ackedN[route] - 1; n > 0 {
		s.ackedN[route] = n
	} else {
		delete(s.ackedN, route)
	}
	return true
}

// guardedUpdate runs fn in a write transaction. A panic in bbolt, or a fault
// on its mapped file, becomes a *CorruptError: the writer is the store's
// own goroutine, where a panic would otherwise end the process.
func (s *Bolt) guardedUpdate(fn func(*bolt.Tx) error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			err = &CorruptError{Path: s.path, Detail: fmt.Sprintf("a write failed: %v", r)}
		}
	}()
	return s.db.Update(fn)
}
