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
// Records keep arrival order. A missing file is an empty mailbox, and a
// notice without retry_at or attempt (older files) reads them as 0.
//
// Every change is one locked read-modify-write: take the lock, re-read the
// file, change it, replace it atomically (see package statefile). Reads take
// no lock and rely on the rename. A file that cannot be read as a mailbox is
// reported as [ErrCorrupt] and never overwritten, so nothing an operator
// could still recover is destroyed silently.
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
// [Mailbox.Retain] refuses a message with [ErrFull] once the mailbox would
// hold more than [MaxRecords] records or more than [MaxRecordsBytes] bytes of
// serialized records; the caller then leaves the message on the broker.
// Consumed and superseded records are pruned once their message timestamp is
// older than [gate.MaxPast], the window in which the trust gate still accepts
// the same message, so a redelivered duplicate still finds its tombstone.
// Unread records are never evicted. Acknowledgements and notice changes are
// not capped, so a full mailbox can always be drained.
package mailbox
