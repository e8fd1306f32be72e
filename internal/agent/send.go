package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/outbox"
	"github.com/interlink-go/interlink/internal/policy"
	"github.com/interlink-go/interlink/internal/relay"
	"github.com/interlink-go/interlink/internal/render"
	"github.com/interlink-go/interlink/internal/route"
	"github.com/interlink-go/interlink/internal/untrusted"
)

// MaxSendBody is the largest /send request body send_message accepts to
// build, so that relays, which take up to 2 MiB, never refuse it for size.
const MaxSendBody = 1 << 20

// statuses lists the task statuses, for error messages.
const statuses = "update, needs_input, result, failed, canceled"

// target is a resolved destination: a key, the label the caller used, and
// the chosen session with what the roster says about it.
type target struct {
	key     identity.PublicKey
	label   string // as typed, or "self"
	self    bool
	session string
	where   whereabouts
}

// whereabouts is what the roster says about the chosen session.
type whereabouts struct {
	kind    presenceKind
	ageMS   uint64
	sibling string // a live session of the same identity, for away
	// unread holds the relays whose roster could not be read, as
	// "<url>: <error>"; noRoster is set when that was every relay.
	unread   []string
	noRoster bool
}

type presenceKind int

const (
	live presenceKind = iota
	away
	gone
)

func (a *Agent) sendMessage(ctx context.Context, args args) (string, error) {
	if err := a.requireReady(); err != nil {
		return "", err
	}
	to, err := args.str("to", true)
	if err != nil {
		return "", err
	}
	text, err := args.str("text", true)
	if err != nil {
		return "", err
	}
	hint, err := args.str("session", false)
	if err != nil {
		return "", err
	}
	taskID, err := args.str("task_id", false)
	if err != nil {
		return "", err
	}
	status, err := args.str("status", false)
	if err != nil {
		return "", err
	}
	inReplyTo, err := args.str("in_reply_to", false)
	if err != nil {
		return "", err
	}
	st := identity.Status(trim(status))
	if st != "" && !st.Valid() {
		return "", invalidf("unknown status %q; use one of %s", status, statuses)
	}
	key, label, err := a.resolvePetname(to, true)
	if err != nil {
		return "", err
	}
	t, err := a.target(ctx, key, label, trim(hint))
	if err != nil {
		return "", err
	}
	m := identity.Message{Text: text, TaskID: taskID, Status: st, InReplyTo: inReplyTo}
	msgID, err := a.queue(ctx, t, to, text, &m)
	if err != nil {
		return "", err
	}
	if st == identity.Status("update") || st.Terminal() {
		if err := a.progress.Outbound(taskID, st); err != nil {
			a.log.Debug("progress marker", "err", err)
		}
	}
	var b strings.Builder
	// The session may come from the roster: another party's text.
	fmt.Fprintf(&b, "queued for %s (%s) (msg_id %s)", to, render.Inert(untrusted.Label(t.session)), msgID)
	switch {
	case taskID != "" && st != "":
		fmt.Fprintf(&b, " [task %s · %s]", taskID, st)
	case taskID != "":
		fmt.Fprintf(&b, " [task %s]", taskID)
	}
	b.WriteString(" — ")
	b.WriteString(presenceNote(t))
	return b.String(), nil
}

func (a *Agent) cancelTask(ctx context.Context, args args) (string, error) {
	if err := a.requireReady(); err != nil {
		return "", err
	}
	to, err := args.str("to", true)
	if err != nil {
		return "", err
	}
	taskID, err := args.str("task_id", true)
	if err != nil {
		return "", err
	}
	reason, err := args.str("reason", false)
	if err != nil {
		return "", err
	}
	if trim(taskID) == "" {
		return "", invalidf("task_id must not be empty")
	}
	key, label, err := a.resolvePetname(to, false)
	if err != nil {
		return "", err
	}
	t, err := a.target(ctx, key, label, "")
	if err != nil {
		return "", err
	}
	text := reason
	if trim(text) == "" {
		text = "canceled"
	}
	m := identity.Message{Text: text, TaskID: taskID, Status: identity.Status("canceled")}
	msgID, err := a.queue(ctx, t, to, "[cancel "+taskID+"] "+text, &m)
	if err != nil {
		return "", err
	}
	if err := a.progress.Canceled(taskID); err != nil {
		a.log.Debug("progress marker", "err", err)
	}
	return fmt.Sprintf("cancellation of task %s sent to %s (%s) (msg_id %s) — %s",
		taskID, to, render.Inert(untrusted.Label(t.session)), msgID, presenceNote(t)), nil
}

// resolvePetname finds the recipient key of to in a fresh read of
// peers.json. With allowSelf, "self" (any case, trimmed) is the own key.
func (a *Agent) resolvePetname(to string, allowSelf bool) (identity.PublicKey, string, error) {
	p, err := a.peers.Load()
	if err != nil {
		return identity.PublicKey{}, "", localState(err)
	}
	if !allowSelf {
		if key, ok := p.Key(to); ok {
			return key, to, nil
		}
		return identity.PublicKey{}, "", invalidf("unknown peer %q: no such petname in peers.json", to)
	}
	key, label, err := p.ResolveSendTarget(to, a.own)
	if upe, ok := errors.AsType[*policy.UnknownPeerError](err); ok {
		return identity.PublicKey{}, "", invalidf("%v", upe)
	}
	if err != nil {
		return identity.PublicKey{}, "", invalidf("%v", err)
	}
	return key, label, nil
}

// queue signs m from this session to t and writes it to the outbox, logged
// under the label peer with logText. The message is on disk when queue
// returns; a full outbox is an error the caller can act on.
func (a *Agent) queue(ctx context.Context, t target, peer, logText string, m *identity.Message) (string, error) {
	msgID, err := identity.NewMsgID(nil)
	if err != nil {
		return "", fmt.Errorf("new msg_id: %w", err)
	}
	m.From = a.own.String()
	m.To = t.key.String()
	m.TS = identity.Millis(a.now())
	m.MsgID = msgID
	m.Kind = identity.KindMessage
	m.ReplyTo = a.route.String()
	if err := a.signer.SignMessage(m); err != nil {
		return "", fmt.Errorf("sign: %w", err)
	}
	rt := route.New(t.key.String(), t.session).String()
	if n, err := sendBodySize(rt, m); err != nil {
		return "", fmt.Errorf("encode: %w", err)
	} else if n > MaxSendBody {
		return "", invalidf("message too large: the request would be %d bytes, more than %d; split the text", n, MaxSendBody)
	}
	if err := a.outbox.EnqueueLogged(ctx, rt, peer, logText, *m); err != nil {
		if errors.Is(err, outbox.ErrFull) {
			return "", invalidf("not sent: %v", err)
		}
		return "", localState(err)
	}
	return msgID, nil
}

// sendBodySize returns the size of the /send request that carries m to rt.
func sendBodySize(rt string, m *identity.Message) (int, error) {
	payload, err := m.MarshalJSON()
	if err != nil {
		return 0, err
	}
	to, err := json.Marshal(rt)
	if err != nil {
		return 0, err
	}
	return len(`{"to":,"payload":}`) + len(to) + len(payload), nil
}

// target picks the session of key that a message goes to: the one hint
// names, or the one routing chooses (see route.Select).
func (a *Agent) target(ctx context.Context, key identity.PublicKey, label, hint string) (target, error) {
	t := target{key: key, label: label, self: key == a.own}
	ros := relay.FetchRoster(ctx, a.relays)
	var entries []relay.Entry
	for _, e := range ros.Entries {
		if e.Key != key || e.Session.SessionID == "" {
			continue
		}
		if t.self && e.Session.SessionID == a.session {
			continue
		}
		entries = append(entries, e)
	}
	q := route.Query{Hint: hint}
	for _, e := range entries {
		q.Sessions = append(q.Sessions, route.Session{ID: e.Session.SessionID, Live: e.Live})
	}
	if t.self {
		q.Exclude = a.session
	} else if s, ok := a.sticky.Get(key); ok {
		q.Sticky = s
	}
	id, err := route.Select(q)
	if err != nil {
		return t, a.routeError(err, label, hint, entries, ros)
	}
	t.session = id
	t.where = whereabouts{kind: gone, unread: ros.Failures, noRoster: ros.Available == 0}
	for _, e := range entries {
		if e.Session.SessionID != id {
			continue
		}
		if e.Live {
			t.where = whereabouts{kind: live}
		} else {
			t.where = whereabouts{kind: away, ageMS: e.AgeMS}
			for _, s := range entries {
				if s.Live && s.Session.SessionID != id {
					t.where.sibling = s.Session.SessionID
					break
				}
			}
		}
		break
	}
	return t, nil
}

// routeError explains why no session could be chosen. When relays did not
// answer with a roster it says so, since "no session on the roster" would
// then be a guess.
func (a *Agent) routeError(err error, label, hint string, entries []relay.Entry, ros relay.Roster) error {
	var amb *route.AmbiguousError
	switch {
	case errors.Is(err, route.ErrOwnSession):
		return invalidf("session %q is this session; a session cannot message itself", hint)
	case errors.Is(err, route.ErrInvalidSession):
		return invalidf("session %q is not a valid session id: %v", hint, err)
	case errors.As(err, &amb) && hint != "":
		return invalidf("session %q matches several sessions of %s; pass the full id:\n%s", hint, label, sessionList(entries))
	case errors.As(err, &amb):
		nLive := 0
		for _, e := range entries {
			if e.Live {
				nLive++
			}
		}
		if nLive > 1 {
			return invalidf("%s has more than one live session; pass session=<id>:\n%s", label, sessionList(entries))
		}
		return invalidf("%s has several sessions, all away; pass session=<id>:\n%s", label, sessionList(entries))
	case errors.Is(err, route.ErrNoSession) && ros.Available == 0:
		return invalidf("could not read a roster from any relay, so no session of %s can be chosen; "+
			"try again when a relay answers, or pass session=<id> if you know it:\n%s", label, rosterFailures(ros.Failures))
	case errors.Is(err, route.ErrNoSession) && label == "self":
		return invalidf("no other session of this identity is on the roster to reach%s", unreadNote(ros.Failures))
	case errors.Is(err, route.ErrNoSession):
		return invalidf("%s has no session on the roster; it may be offline (run discover)%s", label, unreadNote(ros.Failures))
	}
	return invalidf("%v", err)
}

// rosterFailures lists the relays whose roster could not be read, one per
// line. The errors are cleaned: a relay's error text is untrusted.
func rosterFailures(failures []string) string {
	lines := make([]string, len(failures))
	for i, f := range failures {
		lines[i] = "  " + untrusted.Clean(f)
	}
	return strings.Join(lines, "\n")
}

// unreadNote adds the relays whose roster could not be read to a message
// about the roster, if there are any.
func unreadNote(failures []string) string {
	if len(failures) == 0 {
		return ""
	}
	return fmt.Sprintf("; the roster of %d relay(s) could not be read, so the session may be listed there:\n%s",
		len(failures), rosterFailures(failures))
}

// presenceNote is the tail of a send result.
func presenceNote(t target) string {
	switch t.where.kind {
	case live:
		return "the session is live; delivering in the background"
	case away:
		ago := Ago(t.where.ageMS)
		var s string
		if t.where.ageMS < dayMS {
			s = fmt.Sprintf("the session is away (last seen %s ago), probably asleep; it will get the message when it wakes", ago)
		} else {
			s = fmt.Sprintf("the session was last seen %s ago and may be gone rather than asleep; run discover", ago)
		}
		if t.where.sibling != "" {
			s += fmt.Sprintf(". Session %s of the same identity is live: pass session=%q to reach it now",
				render.Inert(untrusted.Label(t.where.sibling)), render.Inert(t.where.sibling))
		}
		return s
	}
	if t.where.noRoster {
		return "no relay's roster could be read, so whether the session exists is unknown; delivering in the background"
	}
	return "the session is not on the roster, so delivery may never happen; run discover" + unreadNote(t.where.unread)
}
