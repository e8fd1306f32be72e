package nats

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/interlink-go/interlink/internal/store"
)

// Conn is the connection of a [Store] to its server. It is there for the
// packages that keep records of their own beside the queue stream, such
// as the bus roster (package rosterlog): they publish and read through
// it, with the store's timeout, logger and error wrapping, and their
// background work ends when the store closes.
type Conn struct {
	nc       *nats.Conn          // fixed at open
	js       jetstream.JetStream // fixed at open
	name     string              // fixed at open; the queue stream's name
	replicas int                 // fixed at open; the queue stream's replicas
	timeout  time.Duration       // fixed at open
	log      *slog.Logger        // fixed at open
	closed   atomic.Bool
	bg       natsWatches // has its own lock; see watch.go
}

// JetStream returns the connection's JetStream context.
func (c *Conn) JetStream() jetstream.JetStream { return c.js }

// Stream returns the name of the queue stream.
func (c *Conn) Stream() string { return c.name }

// Replicas returns how many servers keep the queue stream.
func (c *Conn) Replicas() int { return c.replicas }

// Timeout returns the bound of each request to the server.
func (c *Conn) Timeout() time.Duration { return c.timeout }

// Logger returns the store's logger.
func (c *Conn) Logger() *slog.Logger { return c.log }

// Closed reports whether the store has been closed.
func (c *Conn) Closed() bool { return c.closed.Load() }

// Request returns a context for one request to the server, bounded by
// [Conn.Timeout].
func (c *Conn) Request() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), c.timeout)
}

// Wrap adds context to an error from the server or the connection; nil
// stays nil. Errors of a closed store become [store.ErrClosed], and errors
// while the connection is down wrap [ErrUnreachable].
func (c *Conn) Wrap(op string, err error) error {
	switch {
	case err == nil:
		return nil
	case c.closed.Load():
		return store.ErrClosed
	case !c.nc.IsConnected():
		return store.Errorf(ErrUnreachable, "%s: %s: %v", reasonUnreachable, op, err)
	}
	return store.Errorf(err, "%s: %v", op, err)
}

// Go runs fn in a goroutine of the store with a context that ends when
// stop is called or the store closes; stop waits for fn to return, and
// Close waits for it too.
func (c *Conn) Go(fn func(ctx context.Context)) (stop func()) {
	ctx, cancel := context.WithCancel(c.bg.life)
	done := make(chan struct{})
	c.bg.wg.Add(1)
	go func() {
		defer c.bg.wg.Done()
		defer close(done)
		fn(ctx)
	}()
	return func() {
		cancel()
		<-done
	}
}

// KeepConsuming calls start until it returns a running consumer, pausing
// between tries from watchRetryMin up to watchRetryMax and logging each
// failure with msg and attrs, then keeps the consumer until ctx ends.
// running, if not nil, is called once the consumer runs; what it returns
// is called when ctx has ended, before the consumer stops.
func (c *Conn) KeepConsuming(ctx context.Context, start func(context.Context) (jetstream.ConsumeContext, error),
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
		c.log.Warn(msg, append(attrs, "err", err, "retry_in", pause)...)
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
