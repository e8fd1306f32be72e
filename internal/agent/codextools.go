package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/interlink-go/interlink/internal/codex"
	"github.com/interlink-go/interlink/internal/delivery"
	"github.com/interlink-go/interlink/internal/mailbox"
)

// bindCodexSession binds an unbound Codex agent to its thread. Only the
// session's trusted lifecycle hooks call it; its result, "{}", is what
// those hooks expect.
func (a *Agent) bindCodexSession(_ context.Context, args args) (string, error) {
	thread, err := args.str("thread_id", true)
	if err != nil {
		return "", err
	}
	if a.cfg.Host != HostCodex {
		return "", invalidf("not in Codex mode: bind_codex_session is for the Codex host only")
	}
	if err := codex.ValidThread(thread); err != nil {
		return "", invalidf("%v", err)
	}
	a.bindMu.Lock()
	defer a.bindMu.Unlock()
	if a.isReady() {
		if a.session == thread {
			return "{}", nil
		}
		return "", invalidf("already bound to another Codex thread; a session cannot switch threads")
	}
	if err := a.bind(thread); err != nil {
		return "", err
	}
	a.log.Info("bound to Codex thread", "thread", thread)
	return "{}", nil
}

// failedDeliveries lets the operator look at, retry and discard what could
// not be handed to codex queue.
func (a *Agent) failedDeliveries(ctx context.Context, args args) (string, error) {
	if err := a.requireReady(); err != nil {
		return "", err
	}
	action, err := args.str("action", true)
	if err != nil {
		return "", err
	}
	id, err := args.str("id", false)
	if err != nil {
		return "", err
	}
	a.recoverMu.Lock()
	defer a.recoverMu.Unlock()
	store := a.failed
	if store == nil {
		// A Claude session has no failed deliveries; list shows that.
		if action == "list" {
			return "[]", nil
		}
		if action == "retry" {
			return "", invalidf("retry needs the Codex host")
		}
		if action == "read" || action == "discard" {
			return "", invalidf("unknown failure id %q", id)
		}
		return "", invalidf("unknown action %q: use list, read, retry or discard", action)
	}
	if action != "list" && id == "" {
		if action == "read" || action == "retry" || action == "discard" {
			return "", invalidf("id is required for %s", action)
		}
	}
	switch action {
	case "list":
		es, err := store.List()
		if err != nil {
			return "", localState(err)
		}
		type item struct {
			ID     string `json:"id"`
			MsgID  string `json:"msg_id"`
			Sender string `json:"sender"`
			Reason string `json:"reason"`
			Bytes  int    `json:"bytes"`
		}
		out := make([]item, 0, len(es))
		for _, e := range es {
			out = append(out, item{ID: e.ID, MsgID: e.MsgID, Sender: e.Sender, Reason: e.Reason, Bytes: len(e.Text)})
		}
		b, err := json.Marshal(out)
		if err != nil {
			return "", err
		}
		return string(b), nil
	case "read":
		e, err := a.failedEntry(store, id)
		if err != nil {
			return "", err
		}
		return e.Text, nil
	case "discard":
		if _, err := a.failedEntry(store, id); err != nil {
			return "", err
		}
		if err := store.Remove(id); err != nil {
			return "", localState(err)
		}
		return fmt.Sprintf("discarded the saved entry %s; unread messages stay in the mailbox", id), nil
	case "retry":
		sink, ok := a.sink.(*delivery.Codex)
		if !ok {
			return "", invalidf("retry needs the Codex host with a codex executable")
		}
		e, err := a.failedEntry(store, id)
		if err != nil {
			return "", err
		}
		if err := sink.Retry(ctx, e); err != nil {
			return "", fmt.Errorf("codex queue failed again: %w", err)
		}
		if err := store.Remove(id); err != nil {
			return "", fmt.Errorf("handed to Codex, but the saved entry could not be removed (%w); retrying it again may queue it twice", err)
		}
		if e.Notice {
			if err := a.mailbox.Finish(ctx, e.MsgID, mailbox.StateHostQueued); err != nil {
				a.log.Warn("notice state not recorded", "notice", e.MsgID, "err", err)
			}
		}
		return fmt.Sprintf("handed entry %s to Codex and removed the saved copy", id), nil
	}
	return "", invalidf("unknown action %q: use list, read, retry or discard", action)
}

// failedEntry returns the saved entry id, as a caller mistake when unknown.
func (a *Agent) failedEntry(store *codex.Failed, id string) (codex.Entry, error) {
	e, err := store.Get(id)
	if errors.Is(err, codex.ErrNotFound) {
		return codex.Entry{}, invalidf("unknown failure id %q", id)
	}
	if err != nil {
		return codex.Entry{}, localState(err)
	}
	return e, nil
}
