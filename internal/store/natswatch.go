package store

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Watcher is implemented by the stores that other processes can write to,
// so that a process can learn of messages it did not store itself. The bus
// uses it to wake the long-polls parked on a route when another bus stored
// a message for it.
//
// What a watcher reports is a hint, never a promise: a call may come late,
// twice, or for a message already gone. A caller must look at the queue
// again after a hint, and must not rely on hints alone either; lost says
// when hints may have been missed.
type Watcher interface {
	// Watch calls stored with the route of each message that another
	// process stores from now on, after the store holds it, and lost when
	// such calls may have been missed, such as after the connection to a
	// shared store came back: every route may then have new messages.
	// Messages that this store's own Enqueue stored need no hint, since
	// its caller knows of them; they may be hinted or not.
	// Calls come from the store's own goroutines, one at a time, and must
	// return quickly. They end when stop has returned or the store is
	// closed; stop may be called more than once.
	Watch(stored func(route string), lost func()) (stop func())
}

// Health is implemented by the stores that can fail while the process
// runs and recover by themselves, such as one behind a network connection.
type Health interface {
	// Healthy returns nil when the store can serve requests now, and
	// otherwise why not. It does no I/O, so it can be asked often.
	Healthy() error
}

var (
	_ Watcher = (*NATS)(nil)
	_ Health  = (*NATS)(nil)
)

// Healthy implements [Health]: it reports [ErrClosed] after Close, and an
// error wrapping [ErrUnreachable] while the connection to the server is
// down.
func (s *NATS) Healthy() error {
	if s.closed.Load() {
		return ErrClosed
	}
	if !s.nc.IsConnected() {
		return fmt.Errorf("%w: connection %s", ErrUnreachable, s.nc.Status())
	}
	return nil
}

// watchRetry bounds the pause between two attempts to start a watch.
const (
	watchRetryMin = 100 * time.Millisecond
	watchRetryMax = 5 * time.Second
)

// natsWatches is the background work of a [NATS] store: the watches that
// [NATS.Watch] started. life ends at Close, which then waits for wg.
type natsWatches struct {
	life context.Context
	end  context.CancelFunc
	wg   sync.WaitGroup

	mu     sync.Mutex
	onBack map[uint64]func() // guarded by mu; what each running watch does when the connection is back
	next   uint64            // guarded by mu; the id of the next watch
}

func (w *natsWatches) init() {
	w.life, w.end = context.WithCancel(context.Background())
	w.onBack = make(map[uint64]func())
}

// running records that a watch runs, to be told through onBack each time
// the connection comes back, and returns the function that records its
// end.
func (w *natsWatches) running(onBack func()) (ended func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	id := w.next
	w.next++
	w.onBack[id] = onBack
	return func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		delete(w.onBack, id)
	}
}

// stop ends every watch and waits for their goroutines.
func (w *natsWatches) stop() {
	w.end()
	w.wg.Wait()
}

// reconnected tells every running watch that the connection is back.
func (w *natsWatches) reconnected() {
	w.mu.Lock()
	fns := make([]func(), 0, len(w.onBack))
	for _, fn := range w.onBack {
		fns = append(fns, fn)
	}
	w.mu.Unlock()
	for _, fn := range fns {
		fn()
	}
}

// Watch implements [Watcher] with an ordered consumer on the stream that
// delivers only the headers of each message, from the message after the
// last one stored when the watch starts. A message this store's Enqueue
// stored carries this store's id in a header and is not hinted, so the
// caller's own sends do not wake its polls twice. The consumer lives on the server
// and sees a message only once the stream has stored it, in order; the
// client starts it again after the message it saw last whenever it
// stopped (the connection dropped, the server restarted), so hints for
// messages stored meanwhile come late rather than never. Every time the
// connection comes back, and once the consumer first runs, lost is called
// as well.
//
// Until the consumer runs (the server may be unreachable when Watch is
// called), a goroutine of the store tries again with growing pauses.
func (s *NATS) Watch(stored func(route string), lost func()) (stop func()) {
	ctx, cancel := context.WithCancel(s.bg.life)
	done := make(chan struct{})
	s.bg.wg.Add(1)
	go func() {
		defer s.bg.wg.Done()
		defer close(done)
		s.watch(ctx, stored, lost)
	}()
	return func() {
		cancel()
		<-done
	}
}

// watch runs one watch until ctx ends.
func (s *NATS) watch(ctx context.Context, stored func(string), lost func()) {
	s.runWatch(ctx,
		func(ctx context.Context) (jetstream.ConsumeContext, error) { return s.startWatch(ctx, stored) },
		func() (ended func()) {
			ended = s.bg.running(lost)
			// Messages stored before the watch started had no hint.
			lost()
			return ended
		},
		"cannot watch the stream for messages stored by other processes; trying again", "stream", s.name)
}

// runWatch calls start until it returns a running consumer, pausing
// between tries from watchRetryMin up to watchRetryMax and logging each
// failure with msg and attrs, then keeps the consumer until ctx ends.
// running, if not nil, is called once the consumer runs; what it returns is
// called when ctx has ended, before the consumer stops.
func (s *NATS) runWatch(ctx context.Context, start func(context.Context) (jetstream.ConsumeContext, error),
	running func() (ended func()), msg string, attrs ...any) {
	pause := watchRetryMin
	for {
		cc, err := start(ctx)
		if err == nil {
			ended := func() {}
			if running != nil {
				ended = running()
			}
			<-ctx.Done()
			ended()
			cc.Stop()
			return
		}
		if ctx.Err() != nil {
			return
		}
		s.log.Warn(msg, append(attrs, "err", err, "retry_in", pause)...)
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		pause = min(2*pause, watchRetryMax)
	}
}

// startWatch creates the ordered consumer and starts consuming from it.
func (s *NATS) startWatch(ctx context.Context, stored func(string)) (jetstream.ConsumeContext, error) {
	rctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	info, err := s.stream.Info(rctx)
	if err != nil {
		return nil, s.wrap("watch", err)
	}
	cons, err := s.stream.OrderedConsumer(rctx, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{NATSSubjects(s.name)},
		DeliverPolicy:  jetstream.DeliverByStartSequencePolicy,
		OptStartSeq:    info.State.LastSeq + 1,
		HeadersOnly:    true,
	})
	if err != nil {
		return nil, s.wrap("watch", err)
	}
	cc, err := cons.Consume(func(m jetstream.Msg) {
		route, ok := NATSRoute(s.name, m.Subject())
		if !ok {
			return
		}
		if m.Headers().Get(originHeader) == s.origin {
			return
		}
		stored(route)
	}, jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
		// The client restarts the consumer by itself after the
		// errors that stop it.
		if !s.closed.Load() {
			s.log.Debug("stream watch", "stream", s.name, "err", err)
		}
	}))
	if err != nil {
		return nil, s.wrap("watch", err)
	}
	return cc, nil
}
