// Package budget keeps a session's wake-up and send budgets per peer, the
// breaker that stops two sessions from answering each other without end.
//
// Every automatic wake-up of the host that a peer's messages cause (a
// notice handed to the Stop-hook listener, a channel notification, a codex
// queue run) and every message sent to a peer is counted, per peer, in a
// sliding window. A peer whose wake-ups reach the wake limit within the
// window is paused: its messages are still verified, stored and listed,
// but they no longer wake the host. A send past the send limit is refused.
// Both counts start again after the operator's turn: whatever happened
// before the operator last typed a prompt does not count. Without an
// operator, the window alone lets the counts fall. A turn that interlink or
// the host started by itself is never the operator's, whatever hook runs
// for it ([Typed]): otherwise every wake-up a peer causes would restart
// the counts that are to stop it.
//
// # Files
//
// The counts of one identity and session are the JSON file
// budget/<key>/<session>.json under the state root, changed under the lock
// <session>.lock beside it with an atomic replace, like the other state
// files, so they survive restarts and are shared by the processes of the
// session. The operator's last turn is the file turn/<session> (Unix
// milliseconds), which the host's prompt hook writes for a typed prompt
// (`interlink-mcp turn` in Claude Code, bind_codex_session in Codex); it
// names no key because the hook does not know it.
//
// Each list of times holds at most one window's worth of events, since
// older ones are dropped at every change and events past a limit are not
// recorded; only peers with a recent event are kept.
package budget

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/paths"
	"github.com/interlink-go/interlink/internal/statefile"
)

// Peer names the other side of a conversation: its key, which counts are
// kept by, and its petname, for messages.
type Peer struct {
	Key  identity.PublicKey
	Name string
}

// SendLimitError is the error of a send past the send limit.
type SendLimitError struct {
	Peer  string // petname
	Limit Limit
}

func (e *SendLimitError) Error() string {
	return fmt.Sprintf("budget: %d messages to %s within %s without a prompt from the operator", e.Limit.N, e.Peer, shortDuration(e.Limit.Per))
}

// ErrCorrupt reports a budget file that is not what this package writes.
var ErrCorrupt = errors.New("budget: corrupt budget file")

// Options holds the optional settings of [Open]; nil means defaults.
type Options struct {
	// Wake and Send are the limits; a nil Options means [DefaultWake] and
	// [DefaultSend], a zero Limit means off.
	Wake, Send Limit
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Budget is the budget of one identity and session. It holds only paths,
// limits and the clock, and is safe for concurrent use. A nil *Budget
// counts nothing and limits nothing, like one whose limits are off.
type Budget struct {
	path, lock, turn string
	wake, send       Limit
	now              func() time.Time
}

// Open returns the budget of own's session under stateRoot. Nothing is
// created until the first event is recorded.
func Open(stateRoot string, own identity.PublicKey, session string, opts *Options) (*Budget, error) {
	file, err := paths.SessionFile(stateRoot, paths.Budget, own, session)
	if err != nil {
		return nil, fmt.Errorf("budget: %w", err)
	}
	b := &Budget{wake: DefaultWake, send: DefaultSend, now: time.Now}
	if opts != nil {
		b.wake, b.send = opts.Wake, opts.Send
		if opts.Now != nil {
			b.now = opts.Now
		}
	}
	b.path, b.lock = file.Path(), file.Lock()
	b.turn, err = paths.SessionPath(stateRoot, paths.Turn, session)
	return b, err
}

// Limits returns the wake and send limits.
func (b *Budget) Limits() (wake, send Limit) {
	if b == nil {
		return Limit{}, Limit{}
	}
	return b.wake, b.send
}

// RecordTurn records that the operator of session typed at t: both
// budgets of the session start counting again from t. A prompt hook calls
// [RecordPrompt] instead, which records only a typed prompt.
func RecordTurn(stateRoot, session string, t time.Time) error {
	turn, err := paths.SessionPath(stateRoot, paths.Turn, session)
	if err != nil {
		return fmt.Errorf("budget: %w", err)
	}
	return writeTurn(turn, t)
}

// RecordPrompt records the turn of session whose prompt, as the host's
// prompt hook sees it, is prompt, at t. When the operator typed it
// ([Typed]), both budgets of the session start counting again from t and
// RecordPrompt reports true; any other prompt changes nothing.
func RecordPrompt(stateRoot, session, prompt string, t time.Time) (bool, error) {
	turn, err := paths.SessionPath(stateRoot, paths.Turn, session)
	if err != nil {
		return false, fmt.Errorf("budget: %w", err)
	}
	if !Typed(prompt) {
		return false, nil
	}
	return true, writeTurn(turn, t)
}

// Prompt records the turn whose prompt is prompt now, as [RecordPrompt]
// does for this budget's session.
func (b *Budget) Prompt(prompt string) (bool, error) {
	if b == nil || !Typed(prompt) {
		return false, nil
	}
	return true, writeTurn(b.turn, b.now())
}

// writeTurn writes t to the turn file path.
func writeTurn(path string, t time.Time) error {
	if err := statefile.WriteAtomic(path, []byte(strconv.FormatInt(t.UnixMilli(), 10))); err != nil {
		return fmt.Errorf("budget: %w", err)
	}
	return nil
}

// file is the budget file's content.
type file struct {
	Peers map[string]*peerState `json:"peers"`
}

// peerState is what the file keeps of one peer.
type peerState struct {
	Name  string  `json:"name"`
	Wakes []int64 `json:"wakes,omitempty"` // Unix ms of each wake-up in the window
	Sends []int64 `json:"sends,omitempty"` // Unix ms of each counted send in the window
	// Updates maps a task id to the time its last progress update was
	// counted: later updates of the task within the window count no more.
	Updates map[string]int64 `json:"updates,omitempty"`
	// PausedAt is when the wake-ups reached the limit, 0 while they have
	// not: the one pause notice of this pause has gone out.
	PausedAt int64 `json:"paused_at,omitempty"`
}

// read decodes data, which may be empty.
func read(data []byte, exists bool) (file, error) {
	f := file{Peers: map[string]*peerState{}}
	if !exists || len(data) == 0 {
		return f, nil
	}
	if err := json.Unmarshal(data, &f); err != nil {
		return file{}, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	if f.Peers == nil {
		f.Peers = map[string]*peerState{}
	}
	for k, p := range f.Peers {
		if p == nil {
			delete(f.Peers, k)
		}
	}
	return f, nil
}

// lastTurn returns the time of the operator's last turn in Unix ms, 0 when
// none is recorded or the file cannot be read (then only the window
// counts).
func (b *Budget) lastTurn() int64 {
	data, ok, err := statefile.Read(b.turn)
	if err != nil || !ok {
		return 0
	}
	ms, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
	if err != nil || ms < 0 {
		return 0
	}
	return ms
}

// since returns where counting starts for l at now: the start of the
// window, or just after the operator's last turn if that is later (an
// event of the same millisecond as the turn came before it).
func since(l Limit, now, turn int64) int64 {
	if turn > 0 {
		return max(now-l.Per.Milliseconds(), turn+1)
	}
	return now - l.Per.Milliseconds()
}

// inWindow keeps the times at or after from.
func inWindow(ts []int64, from int64) []int64 {
	return slices.DeleteFunc(ts, func(t int64) bool { return t < from })
}

// prune drops what no longer counts at now and the peers left with
// nothing, and clears a pause that has ended.
func (b *Budget) prune(f *file, now, turn int64) {
	for k, p := range f.Peers {
		p.Wakes = inWindow(p.Wakes, since(b.wake, now, turn))
		p.Sends = inWindow(p.Sends, since(b.send, now, turn))
		from := since(b.send, now, turn)
		for task, t := range p.Updates {
			if t < from {
				delete(p.Updates, task)
			}
		}
		if p.PausedAt != 0 && (b.wake.Off() || len(p.Wakes) < b.wake.N) {
			p.PausedAt = 0
		}
		if len(p.Wakes) == 0 && len(p.Sends) == 0 && len(p.Updates) == 0 && p.PausedAt == 0 {
			delete(f.Peers, k)
		}
	}
}

// update runs fn on the file under its lock and writes the result.
func (b *Budget) update(ctx context.Context, fn func(f *file, now int64)) error {
	now, turn := b.now().UnixMilli(), b.lastTurn()
	err := statefile.UpdateContext(ctx, b.path, b.lock, func(data []byte, exists bool) ([]byte, error) {
		f, err := read(data, exists)
		if err != nil {
			return nil, err
		}
		b.prune(&f, now, turn)
		fn(&f, now)
		return json.Marshal(f)
	})
	if err != nil {
		return fmt.Errorf("budget: %w", err)
	}
	return nil
}

// Paused returns the peers whose wake-ups are paused now, by key. It reads
// the file without the lock.
func (b *Budget) Paused() (map[identity.PublicKey]bool, error) {
	if b == nil || b.wake.Off() {
		return nil, nil
	}
	st, err := b.Status()
	if err != nil {
		return nil, err
	}
	out := map[identity.PublicKey]bool{}
	for _, s := range st {
		if s.Paused {
			out[s.Peer.Key] = true
		}
	}
	return out, nil
}

// Woke records one automatic wake-up of the host caused by each of peers,
// and returns those whose wake-ups this record paused: the caller tells
// the model so, once. A peer already paused is not counted again.
func (b *Budget) Woke(ctx context.Context, peers []Peer) (paused []Peer, err error) {
	if b == nil || b.wake.Off() || len(peers) == 0 {
		return nil, nil
	}
	err = b.update(ctx, func(f *file, now int64) {
		for _, p := range peers {
			ps := f.peer(p)
			if ps.PausedAt != 0 {
				continue
			}
			ps.Wakes = append(ps.Wakes, now)
			if len(ps.Wakes) >= b.wake.N {
				ps.PausedAt = now
				paused = append(paused, p)
			}
		}
	})
	return paused, err
}

// Send counts a message to peer and returns a [*SendLimitError] instead
// when the send limit is reached: the message must not go. A progress
// update (status "update") of a task whose update was counted already
// within the window is not counted again, so a session that reports often
// on one task spends one send on it.
func (b *Budget) Send(ctx context.Context, peer Peer, task string, status identity.Status) error {
	if b == nil || b.send.Off() {
		return nil
	}
	var refused bool
	err := b.update(ctx, func(f *file, now int64) {
		ps := f.peer(peer)
		if status == identity.StatusUpdate && task != "" {
			if _, ok := ps.Updates[task]; ok {
				ps.Updates[task] = now
				return
			}
		}
		if len(ps.Sends) >= b.send.N {
			refused = true
			return
		}
		ps.Sends = append(ps.Sends, now)
		if status == identity.StatusUpdate && task != "" {
			if ps.Updates == nil {
				ps.Updates = map[string]int64{}
			}
			ps.Updates[task] = now
		}
	})
	if err != nil {
		return err
	}
	if refused {
		return &SendLimitError{Peer: peer.Name, Limit: b.send}
	}
	return nil
}

// peer returns the state of p, creating it, with its name brought up to
// date.
func (f *file) peer(p Peer) *peerState {
	k := p.Key.String()
	ps := f.Peers[k]
	if ps == nil {
		ps = &peerState{}
		f.Peers[k] = ps
	}
	ps.Name = p.Name
	return ps
}

// PeerStatus is where one peer stands against the budgets.
type PeerStatus struct {
	Peer         Peer
	Wakes, Sends int  // counted now
	Paused       bool // wake-ups from this peer are paused
	PausedSince  time.Time
}

// Status returns every peer with something counted, sorted by name. It
// reads the file without the lock.
func (b *Budget) Status() ([]PeerStatus, error) {
	if b == nil {
		return nil, nil
	}
	data, ok, err := statefile.Read(b.path)
	if err != nil {
		return nil, fmt.Errorf("budget: %w", err)
	}
	f, err := read(data, ok)
	if err != nil {
		return nil, err
	}
	now, turn := b.now().UnixMilli(), b.lastTurn()
	b.prune(&f, now, turn)
	var out []PeerStatus
	for k, p := range f.Peers {
		key, err := identity.ParsePublicKey(k)
		if err != nil {
			continue
		}
		s := PeerStatus{Peer: Peer{Key: key, Name: p.Name}, Wakes: len(p.Wakes), Sends: len(p.Sends)}
		if p.PausedAt != 0 {
			s.Paused, s.PausedSince = true, time.UnixMilli(p.PausedAt)
		}
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b PeerStatus) int { return strings.Compare(a.Peer.Name, b.Peer.Name) })
	return out, nil
}
