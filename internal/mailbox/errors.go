package mailbox

import "errors"

// Errors returned by this package. Check them with [errors.Is].
var (
	// ErrCorrupt reports a mailbox file that cannot be read as a mailbox: not
	// JSON, a missing or mistyped field, an undecodable message or an unknown
	// state. The file is left as it is; changes fail until it is repaired or
	// removed.
	ErrCorrupt = errors.New("mailbox: corrupt mailbox file")

	// ErrFull reports that admitting a message would exceed [MaxRecords]
	// records or [MaxRecordsBytes] bytes of records. Nothing was changed; the
	// caller must not acknowledge the message to the broker, which keeps it.
	ErrFull = errors.New("mailbox: mailbox is full; messages remain on the broker until it is drained")

	// ErrOverShare reports that admitting a message would take its sender
	// beyond its share of the mailbox: of its unread records or their
	// bytes (half of what the other senders leave free), or of the
	// messages it may have inside the replay window ([MaxTombstones]).
	// Nothing was changed. The caller drops the message: kept on the
	// broker, it would hold up the messages of other senders behind it.
	ErrOverShare = errors.New("mailbox: the sender holds its whole share of the mailbox; its message is refused")
)
