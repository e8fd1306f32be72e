// Package outbox is the agent's durable queue of signed outgoing messages
// and the log of their delivery state, one per identity and session.
//
// # File
//
// The outbox is the file <state root>/outbox/<own key>/<session>.json,
// shared by every process running as that identity and session, with the
// write lock <session>.lock and the sender lock <session>.sender-lock next
// to it. Every change is one locked read-modify-write with atomic replace
// (see package statefile); reads take no lock. The file is compact JSON:
//
//	{"messages":[{"msg_id":"…","route":"<key>#<session>","peer":"bob","text":"…","ts":1700000000000,
//	              "queued_at":1700000000000,"state":"pending","attempts":2,"last_error":"…",
//	              "message":{…the signed message…}},…]}
//
// Entries keep the order they were queued in. A pending entry carries the
// signed message; a finished one (accepted, rejected or expired) keeps only
// the log fields, with its text cut to [MaxFinishedText] bytes. A file
// that cannot be read as an outbox is reported as [ErrCorrupt] and never
// overwritten.
//
// [Outbox.Enqueue] writes the message before it returns, so a message
// survives the process that queued it, whether that process stops, crashes
// or is killed. [Outbox.Status], [Outbox.Pending] and [Outbox.Log] read the
// file for message_status, list_pending and conversation_history, so they
// see what earlier processes of the session sent.
//
// # Delivery
//
// Only one process of a session sends: [Outbox.Run] first takes the sender
// lock and keeps it while it runs; a second process waits for it and takes
// over when the first exits, for whatever reason (the operating system
// releases the lock of a killed process). The sender reads the file
// whenever its own process queues something and every
// [Options.WatchEvery], so messages queued by another process go out too.
//
// Each route has its own worker, which sends the route's pending messages
// oldest first, so a message nobody will take holds back only later
// messages to the same route. An attempt offers the message to every relay
// at once through [relay.Post]:
//
//   - if at least one relay accepts, the message is [StateBusAccepted] and
//     the relays that accepted are recorded; relays that failed in that
//     attempt are not tried again for it;
//   - if every relay refuses it with a permanent 4xx status
//     ([relay.StatusError.Permanent]), the message is [StateRejected], the
//     relays' errors become its reason, and it is not tried again;
//   - otherwise it stays [StatePending] and is tried again after
//     [Options.RetryEvery], or sooner when something is queued.
//
// A message still pending [Options.ExpireAfter] after it was queued is
// [StateExpired] and not tried again. [Outbox.Drain], for a shutdown,
// shortens the wait between attempts to [DrainRetryEvery] and waits until
// nothing is pending.
//
// # Duplicates
//
// The sender lock means two processes never send at the same time, and
// each outcome is written to the file right after the attempt. A message
// can still reach a relay twice: when a process is killed after a relay
// accepted the message and before the outcome was written, or when that
// write fails, the next sender posts it again with the same msg_id.
// Receivers keep a message once per sender and msg_id, so the copy is
// dropped there. Acceptance by a relay is all the sender learns; the
// recipient sends no receipt.
//
// # Re-signing
//
// Receivers drop messages signed more than 24 hours ago as stale. Before an
// attempt, a message whose signed timestamp is older than
// [Options.ResignAfter] is signed again with the current time. The copy keeps
// the msg_id and every other field, so receivers still see one message and
// their replay check still applies, and it replaces the stored message for
// later attempts. The log keeps the timestamp of the first signature. A copy
// already held by a relay is not renewed; the receiver judges freshness when
// it takes the message.
//
// # Pairing messages
//
// Knocks and confirmations of pairing (package pairing) are queued here too,
// with [Outbox.Replace]: a knock asked for again keeps its request id as
// msg_id, so it takes the place of the earlier one rather than being
// refused as a duplicate. [Outbox.Withdraw] takes a pending message back
// when the pairing change it belongs to could not be saved. They are sent,
// signed again, expired, and listed like every other message.
//
// # Bounds
//
// A session has at most [MaxPending] pending messages and
// [MaxPendingBytes] of them; beyond either, Enqueue fails with [ErrFull]
// and writes nothing. The file keeps at most [MaxFinished] finished
// entries; when a message finishes beyond that, the entry that finished
// first is removed and its msg_id forgotten.
package outbox
