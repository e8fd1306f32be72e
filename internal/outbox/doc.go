// Package outbox is the agent's in-memory queue of signed outgoing messages
// and the log of their delivery state.
//
// [Outbox.Enqueue] records a message in the log as [StatePending] and queues
// it for its destination route; [Outbox.Run] delivers the queues until its
// context ends. [Outbox.Status], [Outbox.Pending] and [Outbox.Log] read the
// log for message_status, list_pending and conversation_history.
//
// # Delivery
//
// Each route has its own first-in, first-out queue, worked by its own
// goroutine, so a message nobody will take holds back only later messages to
// the same route. An attempt posts the head message to every relay in order,
// each post with its own timeout:
//
//   - if at least one relay accepts, the message is [StateBusAccepted] and
//     the relays that accepted are recorded; relays that failed in that pass
//     are not tried again for it;
//   - if every relay refuses it with a permanent 4xx status
//     ([relay.StatusError.Permanent]), the message is [StateRejected], the
//     relays' errors become its reason, and it is not tried again;
//   - otherwise it stays [StatePending] at the head of its queue and is tried
//     again after [Options.RetryEvery], or sooner when another message is
//     queued for the same route.
//
// After the first two outcomes the next message of the route is tried at
// once. There is no attempt limit and no back-off: a relay that is down is
// retried until it comes back or the agent exits.
//
// A message is never sent twice at the same time: only the worker of its
// route sends it, one relay after another, and only one [Outbox.Run] may be
// active. Acceptance by a relay is all the sender learns; the recipient sends
// no receipt.
//
// # Re-signing
//
// Receivers drop messages signed more than 24 hours ago as stale. Before an
// attempt, a message whose signed timestamp is older than
// [Options.ResignAfter] is signed again with the current time. The copy keeps
// the msg_id and every other field, so receivers still see one message and
// their replay check still applies, and it replaces the queued message for
// later attempts. The log keeps the timestamp of the first signature. A copy
// already held by a relay is not renewed; the receiver judges freshness when
// it takes the message.
//
// # Bounds
//
// The log keeps at most 4096 finished entries (accepted or rejected); when a
// message finishes beyond that, the entry that finished first is evicted and
// its msg_id is forgotten. Pending entries are never evicted, and the queues
// themselves have no bound: callers limit what they queue. Nothing is kept on
// disk, so a restart loses the queue and the log.
package outbox
