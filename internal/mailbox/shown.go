package mailbox

import "sync"

// MaxShown is the most receipts a [Shown] remembers; beyond it the one
// shown longest ago is forgotten first.
const MaxShown = 2 * MaxRecords

// Shown remembers which messages one process has shown its model: the
// receipts of the records its tool results carried. Acknowledging by
// receipt is limited to these, so a receipt the model did not get from
// this process (one written into a peer's message text to look like
// interlink's own receipt line, or one for a message another process of
// the session fetched) consumes nothing, and the message it names stays
// unread until it is shown here.
//
// It lives in memory only. After a restart the model may hand back
// receipts of messages it was shown before; they consume nothing, the
// messages stay unread and are shown again by the next fetch. At most
// [MaxShown] receipts are kept, the one shown longest ago going first,
// with the same effect. A Shown is safe for concurrent use.
type Shown struct {
	mu    sync.Mutex
	set   map[Receipt]struct{} // guarded by mu
	order []Receipt            // guarded by mu; ring buffer of additions
	next  int                  // guarded by mu; slot of the oldest once full
}

// NewShown returns an empty Shown.
func NewShown() *Shown { return &Shown{set: make(map[Receipt]struct{})} }

// Add records that the messages named by receipts were shown.
func (s *Shown) Add(receipts ...Receipt) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range receipts {
		if _, ok := s.set[r]; ok {
			continue
		}
		if len(s.order) < MaxShown {
			s.order = append(s.order, r)
		} else {
			delete(s.set, s.order[s.next])
			s.order[s.next] = r
			s.next = (s.next + 1) % MaxShown
		}
		s.set[r] = struct{}{}
	}
}

// Split returns the receipts that name messages recorded as shown, and
// the others, each in the order given.
func (s *Shown) Split(receipts []Receipt) (shown, unshown []Receipt) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range receipts {
		if _, ok := s.set[r]; ok {
			shown = append(shown, r)
		} else {
			unshown = append(unshown, r)
		}
	}
	return shown, unshown
}
