package pairing

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"

	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/paths"
	"github.com/interlink-go/interlink/internal/statefile"
	"github.com/interlink-go/interlink/internal/untrusted"
)

// Options holds optional settings for [Open]. A nil *Options means defaults.
type Options struct {
	// Logger receives events such as a queued job dropped because it does
	// not decode. Nil means discard.
	Logger *slog.Logger
	// Write replaces the state file with new contents. Nil means
	// statefile.WriteAtomic; tests set it to simulate a failing disk.
	Write func(path string, data []byte) error
}

// Store reads and changes the pairing state file of one identity and
// session. Every change is one locked read-modify-write of the file, so
// several Store values, in this process or others, may share a file. A Store
// holds no state of its own beyond the paths and is safe for concurrent use.
type Store struct {
	path     string
	lockPath string
	log      *slog.Logger
	// write replaces the file: Options.Write, by default
	// statefile.WriteAtomic.
	write func(path string, data []byte) error
}

// Open returns the store for the identity own and the given session under
// stateRoot: the file <stateRoot>/pairing/<own key>/<session>.json and its
// lock <session>.lock. Nothing is created until the first change.
//
// The session id becomes a file name, so it must pass
// [route.ValidateSession]; an id such as ".." or "a/b" is refused with an
// error wrapping [route.ErrInvalidSession].
func Open(stateRoot string, own identity.PublicKey, session string, opts *Options) (*Store, error) {
	file, err := paths.SessionFile(stateRoot, paths.Pairing, own, session)
	if err != nil {
		return nil, fmt.Errorf("pairing: open: %w", err)
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Write == nil {
		o.Write = statefile.WriteAtomic
	}
	return &Store{
		path:     file.Path(),
		lockPath: file.Lock(),
		log:      o.Logger,
		write:    o.Write,
	}, nil
}

// Path returns the path of the state file.
func (s *Store) Path() string { return s.path }

// Load returns the current state without taking the lock. A missing file is
// the empty state; a file that cannot be read as pairing state is an error
// wrapping [ErrCorrupt].
func (s *Store) Load() (State, error) {
	data, exists, err := statefile.Read(s.path)
	if err != nil {
		return State{}, fmt.Errorf("pairing: %w", err)
	}
	st, err := decode(data, exists)
	if err != nil {
		return State{}, fmt.Errorf("%w (%s)", err, s.path)
	}
	return st, nil
}

// locked runs fn with the file lock held.
func (s *Store) locked(fn func() error) error {
	return statefile.Locked(context.Background(), s.lockPath, fn)
}

// save writes st to the file.
func (s *Store) save(st State) error {
	data, err := encode(st)
	if err != nil {
		return fmt.Errorf("pairing: encode: %w", err)
	}
	if err := s.write(s.path, data); err != nil {
		return fmt.Errorf("pairing: %w", err)
	}
	return nil
}

// update runs fn on the current state with the lock held and writes the
// result when fn reports a change. An error from fn is returned as is and
// nothing is written; so is a corrupt file, which is never overwritten.
func (s *Store) update(fn func(st *State) (changed bool, err error)) error {
	return s.locked(func() error {
		st, err := s.Load()
		if err != nil {
			return err
		}
		changed, err := fn(&st)
		if err != nil || !changed {
			return err
		}
		return s.save(st)
	})
}

// Receive records an inbound request (a knock) and reports whether its key
// was new. A pending request from the same key is refreshed in place with
// req (its request id, reply route and name); that is not new, and writes
// nothing when req equals it. A request from a new key is appended, unless
// [InboundCap] requests are pending already: then nothing changes and the
// error wraps [ErrInboundFull]. A pending request is never evicted.
//
// The name is cleaned with [untrusted.Name] again, so the store never holds
// a raw claimed name even when req was not built by [InboundFromKnock].
func (s *Store) Receive(req Request) (added bool, err error) {
	if req.Key == "" {
		return false, errors.New("pairing: receive: empty key")
	}
	req.Name = untrusted.Name(req.Name)
	err = s.update(func(st *State) (bool, error) {
		i := slices.IndexFunc(st.Inbound, func(e Request) bool { return e.Key == req.Key })
		if i >= 0 && st.Inbound[i] == req {
			return false, nil
		}
		var err error
		st.Inbound, added, err = receive(st.Inbound, req, InboundCap)
		return err == nil, err
	})
	if err != nil {
		return false, err
	}
	return added, nil
}

// Outbox is where a [Store] queues the pairing messages it sends: the
// session's outbox (package outbox), which sends them like any message.
type Outbox interface {
	// Replace queues m, signed, for route, logged for peer with logText;
	// an entry with the same msg_id gives way to it. Once it returns nil
	// the message is on disk.
	Replace(ctx context.Context, route, peer, logText string, m identity.Message) error
	// Withdraw takes back the message msgID if it has not gone out.
	Withdraw(ctx context.Context, msgID string) (bool, error)
}

// Labels under which the outbox logs the pairing messages, in list_pending
// and message_status. A petname never holds a space, so no label is the
// petname of a peer whose conversation it would join.
const (
	requestLabel = "pairing request to "
	acceptLabel  = "pairing confirmation to "
)

// Request records an outbound request to req.Key and queues its knock in
// ob, in one locked change.
//
// If a request to the same key is already outstanding, its request id is
// kept and req.RequestID is ignored: an acceptance of the earlier knock,
// delayed somewhere, then still matches, and the new knock replaces the
// earlier one in ob. build is called with the final id, with the lock
// held, and must return the knock, whose msg_id must be that id (see
// [RequestMessage]). If build fails or ob refuses the knock (a full
// outbox, say), nothing changes; if the state file cannot be written
// afterwards, the knock is withdrawn from ob. Request returns the request
// as stored.
func (s *Store) Request(ctx context.Context, req Request, ob Outbox, build func(requestID string) (Job, error)) (Request, error) {
	if req.Key == "" || req.RequestID == "" {
		return Request{}, errors.New("pairing: request: empty key or request id")
	}
	var stored Request
	err := s.locked(func() error {
		st, err := s.Load()
		if err != nil {
			return err
		}
		id := req.RequestID
		if i := slices.IndexFunc(st.Outbound, func(r Request) bool { return r.Key == req.Key }); i >= 0 && st.Outbound[i].RequestID != "" {
			id = st.Outbound[i].RequestID
		}
		job, err := build(id)
		if err != nil {
			return err
		}
		if job.Msg.MsgID != id || job.Msg.Kind != identity.KindPairRequest {
			return fmt.Errorf("%w: not a knock with msg_id %q, the request id", ErrBadJob, id)
		}
		if err := ob.Replace(ctx, job.Route, requestLabel+req.Name, "pairing request", job.Msg); err != nil {
			return err
		}
		stored = req
		stored.RequestID = id
		st.Outbound = upsert(st.Outbound, stored, OutboundCap)
		if err := s.save(st); err != nil {
			s.withdraw(ob, id)
			return err
		}
		return nil
	})
	if err != nil {
		return Request{}, err
	}
	return stored, nil
}

// withdraw takes the message msgID back from ob after a failure, and logs
// when it cannot.
func (s *Store) withdraw(ob Outbox, msgID string) {
	if _, err := ob.Withdraw(context.Background(), msgID); err != nil {
		s.log.Warn("pairing: message not withdrawn; it may still go out", "msg_id", msgID, "err", err)
	}
}

// Find returns the pending inbound request whose key is fp, or whose key
// starts with fp when fp is exactly a fingerprint ([identity.FingerprintLen]
// characters). Shorter or longer prefixes match nothing: an operator names a
// requester by its whole fingerprint or its whole key. No match is
// [ErrNotFound]; requests from more than one key sharing the fingerprint are
// [ErrAmbiguous], and the full key must be given instead.
func (s *Store) Find(fp string) (Request, error) {
	st, err := s.Load()
	if err != nil {
		return Request{}, err
	}
	var found []Request
	for _, r := range st.Inbound {
		if fp == "" || (r.Key != fp && !(len(fp) == identity.FingerprintLen && identity.Fingerprint(r.Key) == fp)) {
			continue
		}
		if !slices.ContainsFunc(found, func(f Request) bool { return f.Key == r.Key }) {
			found = append(found, r)
		}
	}
	switch len(found) {
	case 0:
		return Request{}, fmt.Errorf("%w for %q", ErrNotFound, fp)
	case 1:
		return found[0], nil
	default:
		return Request{}, fmt.Errorf("%w: %d pending requests match %q", ErrAmbiguous, len(found), fp)
	}
}

// Accept accepts the inbound request req, in one locked change:
//
//  1. req must still be pending exactly as given (same key, name, request
//     id and reply route), else [ErrNotPending]: the operator decided on
//     what they saw, and it has changed;
//  2. job, the confirmation (see [AcceptMessage]), is queued in ob; if ob
//     refuses it (a full outbox, say), authorize is not called, so the
//     peer is never admitted without a confirmation on its way;
//  3. the pending requests from req.Key are removed;
//  4. authorize is called, with the lock held; it is expected to add the
//     requester to the peer policy. Its error is returned as is, the
//     confirmation is withdrawn from ob and nothing is saved;
//  5. the state file is written.
//
// If that last write fails, the peer is authorized but the request is still
// pending and the confirmation is withdrawn from ob. Accept then returns a
// [*ConfirmationPendingError]. Calling Accept again with the same arguments
// once storage works completes the change; authorize runs again, so it must
// be idempotent (adding a peer that is already present with the same name
// must succeed). A confirmation a relay took before it could be withdrawn
// has gone out; the requester ignores the one that follows.
func (s *Store) Accept(ctx context.Context, req Request, job Job, ob Outbox, authorize func() error) error {
	if job.Msg.Kind != identity.KindPairAccept || job.Msg.To != req.Key || job.Msg.InReplyTo != req.RequestID {
		return fmt.Errorf("%w: not the confirmation of request %q from %s", ErrBadJob, req.RequestID, req.Key)
	}
	return s.locked(func() error {
		st, err := s.Load()
		if err != nil {
			return err
		}
		if !slices.Contains(st.Inbound, req) {
			return fmt.Errorf("%w (%s)", ErrNotPending, req.Key)
		}
		label := acceptLabel + identity.Fingerprint(req.Key) + "…"
		if err := ob.Replace(ctx, job.Route, label, "pairing confirmation", job.Msg); err != nil {
			return err
		}
		st.Inbound, _ = removeKey(st.Inbound, req.Key)
		if err := authorize(); err != nil {
			s.withdraw(ob, job.Msg.MsgID)
			return err
		}
		if err := s.save(st); err != nil {
			s.withdraw(ob, job.Msg.MsgID)
			return &ConfirmationPendingError{Key: req.Key, Err: err}
		}
		return nil
	})
}

// Reject removes the pending inbound requests from key and reports whether
// there were any. Nothing is sent: the requester is not told.
func (s *Store) Reject(key string) (bool, error) {
	var removed bool
	err := s.update(func(st *State) (bool, error) {
		st.Inbound, removed = removeKey(st.Inbound, key)
		return removed, nil
	})
	return removed, err
}

// PendingAccept returns the outstanding outbound request that an acceptance
// from key answers, and whether there is one. With a non-empty inReplyTo the
// request id must match too. An empty inReplyTo matches the first request to
// key by key alone, for acceptances from implementations that did not send
// one.
func (s *Store) PendingAccept(key, inReplyTo string) (Request, bool, error) {
	st, err := s.Load()
	if err != nil {
		return Request{}, false, err
	}
	for _, r := range st.Outbound {
		if r.Key == key && (inReplyTo == "" || r.RequestID == inReplyTo) {
			return r, true, nil
		}
	}
	return Request{}, false, nil
}

// Complete retires the outbound request to key with requestID, once its
// acceptance has been handled (whether or not the peer could be added).
// Retiring a request that is not there is not an error.
func (s *Store) Complete(key, requestID string) error {
	return s.update(func(st *State) (bool, error) {
		n := len(st.Outbound)
		st.Outbound = slices.DeleteFunc(st.Outbound, func(r Request) bool {
			return r.Key == key && r.RequestID == requestID
		})
		return len(st.Outbound) != n, nil
	})
}

// MoveQueued hands the pairing messages an earlier version queued in the
// state file to ob, which sends them from then on, and leaves the file's
// queue empty. A job this side would not have queued (see [ErrBadJob]) is
// dropped and logged rather than signed again by the outbox; so is one that
// does not decode. It returns how many jobs were moved. A job ob refuses
// stays in the file, for the next call.
func (s *Store) MoveQueued(ctx context.Context, own identity.PublicKey, ob Outbox) (int, error) {
	moved := 0
	err := s.update(func(st *State) (bool, error) {
		if len(st.queued) == 0 {
			return false, nil
		}
		var keep []json.RawMessage
		for _, raw := range st.queued {
			job, err := decodeJob(raw)
			if err == nil {
				err = checkJob(job, own)
			}
			if err != nil {
				s.log.Warn("pairing: queued job dropped", "path", s.path, "msg_id", probeMsgID(raw), "err", err)
				continue
			}
			label := requestLabel + identity.Fingerprint(job.Msg.To) + "…"
			if job.Msg.Kind == identity.KindPairAccept {
				label = acceptLabel + identity.Fingerprint(job.Msg.To) + "…"
			}
			if err := ob.Replace(ctx, job.Route, label, string(job.Msg.Kind), job.Msg); err != nil {
				s.log.Warn("pairing: queued job not moved to the outbox; will retry", "msg_id", job.Msg.MsgID, "err", err)
				keep = append(keep, raw)
				continue
			}
			moved++
		}
		st.queued = keep
		return true, nil
	})
	return moved, err
}
