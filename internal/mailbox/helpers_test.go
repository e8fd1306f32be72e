package mailbox

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/testutil"
)

var baseTime = time.UnixMilli(1_700_000_000_000)

// clock is a settable clock for Options.Now.
type clock struct {
	mu sync.Mutex // guards t
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func (c *clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

// fixture is a mailbox of identity "me", session "s1", in a temporary state
// root, with a fake clock and predictable notice ids.
type fixture struct {
	root   string
	me     *identity.Signer
	alice  *identity.Signer
	bob    *identity.Signer
	clock  *clock
	mu     sync.Mutex // guards nextID
	nextID int
	mb     *Mailbox
}

// bg is the context of calls that a test does not cancel.
var bg = context.Background()

func newFixture(tb testing.TB) *fixture {
	tb.Helper()
	f := &fixture{
		root:  tb.TempDir(),
		me:    testutil.NumberedSigner(tb, 1),
		alice: testutil.NumberedSigner(tb, 2),
		bob:   testutil.NumberedSigner(tb, 3),
		clock: &clock{t: baseTime},
	}
	f.mb = f.open(tb)
	return f
}

// open returns another Mailbox value on the fixture's file.
func (f *fixture) open(tb testing.TB) *Mailbox {
	tb.Helper()
	mb, err := Open(f.root, f.me.Public(), "s1", &Options{Now: f.clock.Now, NewID: f.newID})
	if err != nil {
		tb.Fatal(err)
	}
	return mb
}

func (f *fixture) newID() (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nextID++
	return fmt.Sprintf("n%07d", f.nextID), nil
}

// msg is the parts of a test message that vary.
type msg struct {
	from    *identity.Signer // nil means alice
	id      string
	ts      time.Duration // offset from baseTime
	task    string
	status  identity.Status
	replyTo string
	text    string
}

// message builds and signs m, addressed to the fixture's identity.
func (f *fixture) message(tb testing.TB, m msg) identity.Message {
	tb.Helper()
	from := m.from
	if from == nil {
		from = f.alice
	}
	text := m.text
	if text == "" {
		text = "body of " + m.id
	}
	out := identity.Message{
		To: f.me.Public().String(), Text: text, TS: identity.Millis(baseTime.Add(m.ts)),
		MsgID: m.id, TaskID: m.task, Status: m.status, InReplyTo: "",
	}
	if err := from.SignMessage(&out); err != nil {
		tb.Fatal(err)
	}
	out.ReplyTo = m.replyTo
	return out
}

// retain stores m from peer "alice" (or the peer named by its sender) and
// fails the test if it was not added.
func (f *fixture) retain(tb testing.TB, m msg) identity.Message {
	tb.Helper()
	im := f.message(tb, m)
	added, err := f.mb.Retain(bg, im, f.peerOf(im))
	if err != nil {
		tb.Fatalf("Retain(%s): %v", m.id, err)
	}
	if !added {
		tb.Fatalf("Retain(%s) = not added, want added", m.id)
	}
	return im
}

func (f *fixture) peerOf(m identity.Message) string {
	if m.From == f.bob.Public().String() {
		return "bob"
	}
	return "alice"
}

// records returns all records of the fixture's mailbox.
func (f *fixture) records(tb testing.TB) []Record {
	tb.Helper()
	recs, err := f.mb.Records()
	if err != nil {
		tb.Fatal(err)
	}
	return recs
}

// all returns the unread records, then a record for every tombstone that
// carries what the tombstone keeps (sender, msg_id, time, state and
// superseded_by; no text).
func (f *fixture) all(tb testing.TB) []Record {
	tb.Helper()
	recs := f.records(tb)
	tombs, err := f.mb.Tombstones()
	if err != nil {
		tb.Fatal(err)
	}
	for _, t := range tombs {
		recs = append(recs, Record{
			Message:      identity.Message{From: t.Sender, MsgID: t.MsgID, TS: t.TS},
			State:        t.State(),
			SupersededBy: t.SupersededBy,
		})
	}
	return recs
}

// record returns the record or tombstone (see all) with msg_id id, from
// any sender.
func (f *fixture) record(tb testing.TB, id string) Record {
	tb.Helper()
	for _, r := range f.all(tb) {
		if r.Message.MsgID == id {
			return r
		}
	}
	tb.Fatalf("no record %s", id)
	return Record{}
}

// notice returns the notice currently stored in the file.
func (f *fixture) notice(tb testing.TB) *Notice {
	tb.Helper()
	d, err := f.mb.read()
	if err != nil {
		tb.Fatal(err)
	}
	return d.notice
}

// ids returns the msg_ids of recs in order.
func ids(recs []Record) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = r.Message.MsgID
	}
	return out
}

func receipt(m identity.Message) Receipt { return Receipt{Sender: m.From, MsgID: m.MsgID} }
