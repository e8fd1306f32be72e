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
	w := &watcher{conn: &s.conn, stream: s.stream, origin: s.origin, stored: stored, lost: lost}
	return s.conn.Go(w.run)
}

// watcher is one watch of a store's stream ([Store.Watch]): the ordered
// consumer it starts, and starts again, and what it calls. Its fields are
// fixed when it is made.
type watcher struct {
	conn   *Conn
	stream jetstream.Stream
	origin string             // the Origin header of the watching store's own messages
	stored func(route string) // a message another process stored on route
	lost   func()             // hints may have been missed
}

// run runs the watch until ctx ends.
func (w *watcher) run(ctx context.Context) {
	w.conn.KeepConsuming(ctx,
		w.start,
		func() (ended func()) {
			ended = w.conn.bg.running(w.lost)
			// Messages stored before the watch started had no hint.
			w.lost()
			return ended
		},
		"cannot watch the stream for messages stored by other processes; trying again", "stream", w.conn.name)
}

// start creates the ordered consumer and starts consuming from it.
func (w *watcher) start(ctx context.Context) (jetstream.ConsumeContext, error) {
	rctx, cancel := context.WithTimeout(ctx, w.conn.timeout)
	defer cancel()
	info, err := w.stream.Info(rctx)
	if err != nil {
		return nil, w.conn.Wrap("watch", err)
	}
	cons, err := w.stream.OrderedConsumer(rctx, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{Subjects(w.conn.name)},
		DeliverPolicy:  jetstream.DeliverByStartSequencePolicy,
		OptStartSeq:    info.State.LastSeq + 1,
		HeadersOnly:    true,
	})
	if err != nil {
		return nil, w.conn.Wrap("watch", err)
	}
	cc, err := cons.Consume(func(m jetstream.Msg) {
		route, ok := Route(w.conn.name, m.Subject())
		if !ok {
			return
		}
		if m.Headers().Get(originHeader) == w.origin {
			return
		}
		w.stored(route)
	}, jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
		// The client restarts the consumer by itself after the
		// errors that stop it.
		if !w.conn.closed.Load() {
			w.conn.log.Debug("stream watch", "stream", w.conn.name, "err", err)
		}
	}))
	if err != nil {
		return nil, w.conn.Wrap("watch", err)
	}
	return cc, nil
}
