// Package mailbox keeps the shared inbound mailbox of one identity and
// session: the verified messages that reached this session, whether each has
// been consumed, and the one inbox notice currently asking the host to look.
//
// # File
//
// The mailbox is the file <state root>/mailbox/<own key>/<session>.json,
// shared by every process running as that identity and session (a restarted
// server, a sibling instance), with the write lock <session>.lock next to it.
// The sidecar <session>.notifier-lock belongs to the notification loop; this
// package only names it ([Mailbox.NotifierLockPath]). The file is compact
// JSON:
//
//	{"records":[{"message":{...},"peer":"alice","state":"receiver_stored","superseded_by":null},...],
//	 "notice":null | {"id":"1a2b3c4d","state":"preparing","messages":[["<sender>","<msg_id>"],...],
//	                  "retry_at":1700000030000,"attempt":0}}
//
// The file holds the unread records only, in arrival order. A missing file
// is an empty mailbox, and a notice without retry_at or attempt (older
// files) reads them as 0.
//
// A message that stops being unread (acknowledged, or superseded by newer
// progress) leaves the file and becomes a tombstone: sender, msg_id,
// signed time, its state, and for task progress the task fields that
// coalescing compares, but no text. Tombstones are lines of
// <session>.tombstones.jsonl beside the file, written under the same lock:
// appended as messages are consumed, so a change costs the same whatever
// the day's traffic, and rewritten without the dead ones (those that left
// the replay window, and lines a later line replaced) once there are at
// least as many dead lines as live ones, so a rewrite is paid for by the
// appends before it. Each Mailbox reads the log incrementally, only what
// was appended since its last look, and in full after a rewrite. A file
// of the earlier shape, which kept consumed records whole, is moved to the
// log (and their text to the history) by the first change.
//
// The text of a message that stops being unread, or arrives already
// superseded, goes to the history: the folder <session>.history beside
// the file, one file per UTC day of the signed time, <YYYY-MM-DD>.jsonl,
// a line per message (the message as it arrived, its petname and its
// state then), appended in the same locked change, before the tombstone.
// A line is never rewritten; a later state (acknowledged after being
// superseded) is the tombstone's. A day's file is removed whole once
// every message it can hold has left the replay window, by the first
// change or read of the history after that, under the lock. So
// [Mailbox.History], [Mailbox.Find] and [Mailbox.FindReceipt] show
// received messages in any state for the window, while storing a new
// message writes neither log. The history only shows: the records and
// the tombstones alone decide which messages are new, and a history that
// is missing, damaged or cannot be written changes nothing else (a line
// that cannot be read is skipped, a failed write is logged). The log of
// day files itself, its lines and its per-sender shares, is package
// mailbox/history; the mailbox calls it under its own lock.
//
// Every change is one locked read-modify-write: take the lock, re-read the
// file, change it, append its tombstones, replace the file atomically (see
// package statefile). Reads of unread records take no lock and rely on the
// rename; [Mailbox.Tombstones] takes the lock. A file or log line that
// cannot be read is reported as [ErrCorrupt] and never overwritten, so
// nothing an operator could still recover is destroyed silently.
//
// # Records
//
// A record is unread while its state is not [StateAcknowledged] and it has
// not been superseded. Acknowledgement is explicit and by exact receipt
// (sender key and msg_id), never implied by a fetch or a notice, so a lost
// tool response leaves the messages recoverable. Progress is coalesced on
// arrival (see [Mailbox.Retain]): an update is superseded by a newer update
// or a terminal status of the same task from the same sender and route, and
// questions, failures and results are never hidden.
//
// # Notices
//
// A notice covers the attention set, the unread records whose status is not
// update; a progress-only backlog never wakes the host. Notices expire: while
// attention-worthy messages remain unread a fresh notice (new id) is issued
// after a back-off of 30 s, doubling per attempt up to 300 s. A notice that
// was lost, ignored or never handed off therefore cannot silence the mailbox
// for good; duplicate wake-ups are possible and accepted. Notice text never
// carries peer-controlled content ([NoticeText]).
//
// # Bounds
//
// The tombstone log is the mailbox's replay state, keyed by time: a
// tombstone is kept while its message timestamp is within
// [protocol.MaxPast], the window in which the trust gate still accepts the
// same message, so a redelivered duplicate always finds it; nothing
// evicts it earlier. A progress update superseded by a message of the same
// task signed later (a final status: no earlier) needs no tombstone, since
// that message outlives it and a copy of the update arrives superseded
// again; so streams of progress cost no replay state.
//
// Every bound is a share per sender (the signing key; a sibling session
// of this identity is one sender like a peer), so no sender can use up
// what another needs. [Mailbox.Retain] refuses a message with
// [ErrOverShare] when its sender would then hold more than half of what
// the other senders leave free of [MaxRecords] unread records or
// [MaxRecordsBytes] bytes of them, or more than [MaxTombstones] messages
// inside the replay window, unread or not. The caller drops such a
// message: left on the broker, it would hold up the messages of other
// senders queued behind it. Only unread records count against the first
// two: a session that reads what it receives is never full, however much
// it receives. With these shares the mailbox as a whole never fills;
// should it hold more than its bounds anyway (a file written otherwise),
// Retain fails with [ErrFull] and the caller leaves the message on the
// broker. Unread records are never evicted. Acknowledgements and notice
// changes are not capped, so a full mailbox can always be drained.
//
// The history is bounded per sender and UTC day: [MaxHistoryLines]
// messages and [MaxHistoryBytes] bytes of lines. The text of a further
// message of that sender and day is not kept; its tombstone is written as
// usual, and one marker line per sender and day says so ([Mailbox.NotKept]).
// Only days that can still hold a message of the window have a file (the
// day before, the day, and the next while clocks differ), so one sender
// holds at most three days' share of the history at once, whatever it
// sends: distinct messages, updates superseded at once, or updates that
// arrive superseded.
package mailbox
