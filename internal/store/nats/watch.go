package nats

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/interlink-go/interlink/internal/store"
)

var (
	_ store.Watcher = (*Store)(nil)
	_ store.Health  = (*Store)(nil)
)

// Healthy implements [store.Health]: it reports [store.ErrClosed] after Close, and an
// error wrapping [ErrUnreachable] while the connection to the server is
// down.
func (s *Store) Healthy() error {
	if s.conn.closed.Load() {
		return store.ErrClosed
	}
	if !s.conn.nc.IsConnected() {
		return fmt.Errorf("%w: connection %s", ErrUnreachable, s.conn.nc.Status())
	}
	return nil
}

// watchRetry bounds the pause between two attempts to start a watch.
const (
	watchRetryMin = 100 * time.Millisecond
	watchRetryMax = 5 * time.Second
)

// natsWatches is the background work of a [Store] store: the watches that
// [Store.Watch] started. life ends at Close, which then waits for wg.
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

// Watch implements [store.Watcher] with an ordered consumer on the stream that
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
func (s *Store) Watch(stored func(route string), lost func()) (stop func()) {
	return s.conn.Go(func(ctx context.Context) { s.watch(ctx, stored, lost) })
}

// watch runs one watch until ctx ends.
func (s *Store) watch(ctx context.Context, stored func(string), lost func()) {
	s.conn.KeepConsuming(ctx,
		func(ctx context.Context) (jetstream.ConsumeContext, error) { return s.startWatch(ctx, stored) },
		func() (ended func()) {
			ended = s.conn.bg.running(lost)
			// Messages stored before the watch started had no hint.
			lost()
			return ended
		},
		"cannot watch the stream for messages stored by other processes; trying again", "stream", s.conn.name)
}

// startWatch creates the ordered consumer and starts consuming from it.
func (s *Store) startWatch(ctx context.Context, stored func(string)) (jetstream.ConsumeContext, error) {
	rctx, cancel := context.WithTimeout(ctx, s.conn.timeout)
	defer cancel()
	info, err := s.stream.Info(rctx)
	if err != nil {
		return nil, s.conn.Wrap("watch", err)
	}
	cons, err := s.stream.OrderedConsumer(rctx, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{Subjects(s.conn.name)},
		DeliverPolicy:  jetstream.DeliverByStartSequencePolicy,
		OptStartSeq:    info.State.LastSeq + 1,
		HeadersOnly:    true,
	})
	if err != nil {
		return nil, s.conn.Wrap("watch", err)
	}
	cc, err := cons.Consume(func(m jetstream.Msg) {
		route, ok := Route(s.conn.name, m.Subject())
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
		if !s.conn.closed.Load() {
			s.conn.log.Debug("stream watch", "stream", s.conn.name, "err", err)
		}
	}))
	if err != nil {
		return nil, s.conn.Wrap("watch", err)
	}
	return cc, nil
}
