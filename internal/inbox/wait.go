package inbox

import (
	"context"
	"time"
)

// Listener defaults.
const (
	// DefaultPoll is how often a waiting listener looks for new records.
	DefaultPoll = 400 * time.Millisecond
	// DefaultRenewAfter is how long a listener waits before it asks for a
	// renewal: under the hour Claude Code allows an asynchronous hook, so a
	// new listener is armed before the old one is killed.
	DefaultRenewAfter = 3000 * time.Second
)

// RenewalText is what a listener prints when it gives up waiting: the model
// should end its turn without doing anything, so that the Stop hook starts
// a fresh listener.
const RenewalText = "[interlink listener renewal] No peer message arrived while this listener waited. " +
	"End this turn now, without calling tools and without a reply to the user, so that the Stop hook can start a new listener."

// Wait reads batches every poll until one holds records, renewAfter has
// passed, or ctx ends. It returns the batch, or an empty batch and renew
// true when the time ran out. The cursor is not moved: commit the batch
// with [Inbox.Commit] once it has been shown.
func (b *Inbox) Wait(ctx context.Context, renewAfter, poll time.Duration) (batch Batch, renew bool, err error) {
	deadline := time.Now().Add(renewAfter)
	for {
		batch, err := b.Read()
		if err != nil || len(batch.Lines) > 0 {
			return batch, false, err
		}
		left := time.Until(deadline)
		if left <= 0 {
			return Batch{}, true, nil
		}
		t := time.NewTimer(min(poll, left))
		select {
		case <-ctx.Done():
			t.Stop()
			return Batch{}, false, ctx.Err()
		case <-t.C:
		}
	}
}
