package presence

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/relay"
	"github.com/interlink-go/interlink/internal/untrusted"
)

// DefaultEvery is the announcement interval when [Options.Every] is zero.
// Relays count a session as live for [relay.LiveWindow] after its last
// announcement, so a live session can miss two in a row.
const DefaultEvery = 30 * time.Second

// SummaryLimit is the most characters (Unicode code points) a summary may
// have. It matches what receivers keep, so a summary is never cut short on
// the way.
const SummaryLimit = untrusted.SummaryLimit

// ErrSummaryTooLong means [Announcer.SetSummary] was given a summary over
// [SummaryLimit] characters after trimming.
var ErrSummaryTooLong = errors.New("presence: summary too long")

// Options holds optional settings of an [Announcer]. A nil *Options or a
// zero field means the default.
type Options struct {
	// Every is the interval between announcements; 0 means DefaultEvery.
	Every time.Duration
	// Now is the clock that stamps announcements and goodbyes; nil means
	// time.Now.
	Now func() time.Time
	// Logger receives debug events about failed requests; nil discards
	// them.
	Logger *slog.Logger
	// Caps, if not nil, is the capabilities list every announcement
	// carries, signed ([identity.Signer.AnnounceCaps]); nil announces
	// without the extension, as the original does.
	Caps []string
	// Readers, if set, adds the privacy extension to every announcement
	// ([identity.Signer.AnnouncePrivate]): it is called before each one
	// and returns the keys that may read the session's details (its
	// peers) on a relay that serves the roster per requester. Nil
	// announces without the extension.
	Readers func() []identity.PublicKey
	// Discoverable, with Readers set, lets such a relay show the public
	// variant of the announcement (name, key and route) to anyone;
	// otherwise only the readers see the session at all.
	Discoverable bool
	// Seal, if set, makes the payload of each goodbye, sealing it to a
	// recipient that accepts sealed messages (as [outbox.Options.Seal]
	// does); nil sends goodbyes plain.
	Seal func(m *identity.Message, plain []byte) (payload []byte, sealed bool, err error)
}

// Announcer publishes one session's presence on a set of relays. Its
// methods are safe for concurrent use, but [Announcer.Run] must be running
// at most once at a time.
type Announcer struct {
	// Fixed at creation.
	relays []*relay.Client
	signer *identity.Signer
	name   string
	every  time.Duration
	now    func() time.Time
	log    *slog.Logger
	caps   []string
	// readers and discoverable are Options.Readers and
	// Options.Discoverable.
	readers      func() []identity.PublicKey
	discoverable bool
	seal         func(m *identity.Message, plain []byte) ([]byte, bool, error)
	// kick holds at most one pending request for an early announcement.
	kick chan struct{}

	mu   sync.Mutex
	info identity.SessionInfo // guarded by mu
}

// New returns an Announcer that announces info under the roster name name,
// signed by signer, to every client in relays.
func New(relays []*relay.Client, signer *identity.Signer, name string, info identity.SessionInfo, opts *Options) *Announcer {
	a := &Announcer{
		relays: relays,
		signer: signer,
		name:   name,
		every:  DefaultEvery,
		now:    time.Now,
		kick:   make(chan struct{}, 1),
		info:   info,
	}
	if opts != nil {
		if opts.Every > 0 {
			a.every = opts.Every
		}
		if opts.Now != nil {
			a.now = opts.Now
		}
		a.log = opts.Logger
		a.caps = opts.Caps
		a.seal = opts.Seal
		a.readers = opts.Readers
		a.discoverable = opts.Discoverable
	}
	if a.log == nil {
		a.log = slog.New(slog.DiscardHandler)
	}
	return a
}

// Info returns the current session descriptor.
func (a *Announcer) Info() identity.SessionInfo {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.info
}

// CheckSummary returns s as a summary keeps it, trimmed of surrounding
// white space, or an error wrapping [ErrSummaryTooLong] when that is longer
// than [SummaryLimit] characters.
func CheckSummary(s string) (string, error) {
	s = strings.TrimSpace(s)
	if n := utf8.RuneCountInString(s); n > SummaryLimit {
		return "", fmt.Errorf("%w: %d characters, the limit is %d", ErrSummaryTooLong, n, SummaryLimit)
	}
	return s, nil
}

// SetSummary replaces the summary of the descriptor with s as
// [CheckSummary] keeps it, and asks a running [Announcer.Run] to announce
// at once. A summary that CheckSummary refuses leaves the old one.
func (a *Announcer) SetSummary(s string) error {
	s, err := CheckSummary(s)
	if err != nil {
		return err
	}
	a.mu.Lock()
	a.info.Summary = s
	a.mu.Unlock()
	select {
	case a.kick <- struct{}{}:
	default: // an announcement is already pending and will carry s
	}
	return nil
}

// Run announces the session to every relay at once, then again every
// interval and right after each [Announcer.SetSummary], until ctx ends.
// Each round waits for all relays, each bounded by the relay client's own
// timeout; failures are logged at debug level and otherwise ignored.
func (a *Announcer) Run(ctx context.Context) {
	// A summary set before Run started is in the first announcement.
	select {
	case <-a.kick:
	default:
	}
	t := time.NewTicker(a.every)
	defer t.Stop()
	for {
		a.announce(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-a.kick:
			t.Reset(a.every)
		}
	}
}

// announce posts one freshly signed announcement to every relay
// concurrently and waits for all of them.
func (a *Announcer) announce(ctx context.Context) {
	if ctx.Err() != nil {
		return
	}
	info := a.Info()
	ts := identity.Millis(a.now())
	var ann identity.Announcement
	switch {
	case a.readers != nil:
		ann = a.signer.AnnouncePrivate(a.name, info, ts, a.caps, a.readers(), a.discoverable)
	case a.caps != nil:
		ann = a.signer.AnnounceCaps(a.name, info, ts, a.caps)
	default:
		ann = a.signer.Announce(a.name, info, ts)
	}
	var wg sync.WaitGroup
	for _, c := range a.relays {
		wg.Go(func() {
			if err := c.Announce(ctx, ann); err != nil {
				a.log.Debug("presence: announce failed", "relay", c.URL(), "session", info.SessionID, "err", err)
			}
		})
	}
	wg.Wait()
}

// unregisterTimeout bounds the withdrawal, which goes to every relay at
// once, so it also bounds each request.
const unregisterTimeout = 3 * time.Second

// Unregister asks every relay concurrently to drop this session's roster
// entry, and returns when all have answered or 3 s have passed,
// whichever comes first. Errors are logged at debug level.
//
// Call it only after [Announcer.Run] has returned: a Run still going could
// announce again right after the entry was removed, and the session would
// stay on the roster until the relays' retention limit.
func (a *Announcer) Unregister(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, unregisterTimeout)
	defer cancel()
	pub := a.signer.Public().String()
	info := a.Info()
	var wg sync.WaitGroup
	for _, c := range a.relays {
		wg.Go(func() {
			if err := c.Unregister(ctx, pub, info); err != nil {
				a.log.Debug("presence: unregister failed", "relay", c.URL(), "session", info.SessionID, "err", err)
			}
		})
	}
	wg.Wait()
}
