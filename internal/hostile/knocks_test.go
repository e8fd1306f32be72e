package hostile

import (
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/interlink-go/interlink/internal/agent"
	"github.com/interlink-go/interlink/internal/bus/bustest"
	"github.com/interlink-go/interlink/internal/delivery"
	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/inbound"
	"github.com/interlink-go/interlink/internal/inbox"
	"github.com/interlink-go/interlink/internal/pairing"
	"github.com/interlink-go/interlink/internal/testutil"
)

// maxInboxBytes is the most the Claude notice inbox may hold after a flood.
const maxInboxBytes = 64 << 10

// Knock floods cost the receiver nothing it cannot bear: one key knocking
// a thousand times leaves one pending request and one notice; two hundred
// fresh keys do not push out a request pending before them, and what they
// lose is reported in one notice with the count; the notice inbox stays
// under 64 KiB and is emptied once the listener has shown it.
func TestKnockFloodsCostNothing(t *testing.T) {
	url := bustest.Start(t, nil)
	victim := newParty(t)
	var box *inbox.Inbox
	clk := &heldClock{}
	v := start(t, victim, "v1", url, &nodeOpts{edit: func(c *agent.Config, root string) {
		c.Timing.Now = clk.now
		var err error
		if box, err = inbox.Open(root, c.Session); err != nil {
			t.Fatal(err)
		}
		if c.Sink, err = delivery.NewInbox(box); err != nil {
			t.Fatal(err)
		}
	}})
	knockNotices := func(fp string) int {
		data, err := os.ReadFile(box.Path())
		if err != nil {
			t.Fatal(err)
		}
		return strings.Count(string(data), "Pairing request from an unknown key, fingerprint "+fp)
	}

	eve := newStranger(testutil.NumberedSigner(t, 4000))
	post(t, url, v.route(), eve.sign(t, victim.key(), identity.KindPairRequest, "eve", nil))
	v.waitText("list_pair_requests", nil, eve.signer.Public().Fingerprint())

	// One key, a thousand knocks, each a distinct signed message.
	flooder := newStranger(testutil.NumberedSigner(t, 4001))
	for i := range 1000 {
		post(t, url, v.route(), flooder.sign(t, victim.key(), identity.KindPairRequest, "flood", func(m *identity.Message) {
			m.Text = "flood " + strings.Repeat("x", i%50)
		}))
	}
	drained(t, url, v.route())
	st := pendingRequests(t, v)
	if n := countKey(st, flooder.signer.Public()); n != 1 {
		t.Errorf("the flooding key has %d pending requests, want 1", n)
	}
	if n := knockNotices(flooder.signer.Public().Fingerprint()); n != 1 {
		t.Errorf("the flooding key caused %d notices, want 1", n)
	}

	// Two hundred fresh keys, one knock each. The victim's clock stands
	// still meanwhile, so that however slowly the machine takes them, all
	// their drops fall within one notice's gathering delay; it moves on
	// past the delay once they are all handled.
	clk.hold()
	for i := range 200 {
		s := newStranger(testutil.NumberedSigner(t, 5000+i))
		post(t, url, v.route(), s.sign(t, victim.key(), identity.KindPairRequest, "fresh", nil))
	}
	drained(t, url, v.route())
	clk.release(inbound.DroppedNoticeDelay)
	st = pendingRequests(t, v)
	if len(st) != pairing.InboundCap || countKey(st, eve.signer.Public()) != 1 || countKey(st, flooder.signer.Public()) != 1 {
		t.Errorf("%d pending requests (eve's: %d, the flooder's: %d), want %d with both kept",
			len(st), countKey(st, eve.signer.Public()), countKey(st, flooder.signer.Public()), pairing.InboundCap)
	}
	const dropped = "pairing requests from unknown keys were dropped without being recorded"
	eventually(t, "one notice of the dropped knocks", func() bool {
		data, _ := os.ReadFile(box.Path())
		return strings.Contains(string(data), dropped)
	})
	data, err := os.ReadFile(box.Path())
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(data), dropped); n != 1 {
		t.Errorf("%d notices of dropped knocks, want 1", n)
	}
	wantDropped := 200 - (pairing.InboundCap - 2)
	if !strings.Contains(string(data), strconv.Itoa(wantDropped)+" "+dropped) {
		t.Errorf("the notice does not count %d dropped knocks:\n%s", wantDropped, lineWith(string(data), dropped))
	}
	t.Logf("notice inbox after the floods: %d bytes (%d knock notices and %d other lines)",
		len(data), strings.Count(string(data), "Pairing request from an unknown key"), strings.Count(string(data), "\n")-strings.Count(string(data), "Pairing request from an unknown key"))
	if len(data) >= maxInboxBytes {
		t.Errorf("the notice inbox holds %d bytes, want under %d", len(data), maxInboxBytes)
	}

	// The listener shows everything; the inbox is then empty again.
	for {
		batch, err := box.Read()
		if err != nil {
			t.Fatal(err)
		}
		if len(batch.Lines) == 0 {
			break
		}
		if err := box.Commit(batch.End); err != nil {
			t.Fatal(err)
		}
	}
	if fi, err := os.Stat(box.Path()); err != nil || fi.Size() != 0 {
		t.Errorf("after the listener showed every record the inbox holds %v bytes (%v), want 0", fi.Size(), err)
	}
}

// heldClock is the real clock until hold, then the instant of hold until
// release, then the real clock moved on by release's extra time.
type heldClock struct {
	mu     sync.Mutex
	held   time.Time     // guarded by mu: zero when not held
	offset time.Duration // guarded by mu
}

func (c *heldClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.held.IsZero() {
		return c.held
	}
	return time.Now().Add(c.offset)
}

func (c *heldClock) hold() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.held = time.Now().Add(c.offset)
}

// release lets the clock run again from the held instant plus extra.
func (c *heldClock) release(extra time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.offset = time.Until(c.held.Add(extra))
	c.held = time.Time{}
}

func pendingRequests(t testing.TB, v *node) []pairing.Request {
	t.Helper()
	ps, err := pairing.Open(v.root, v.p.key(), v.session, nil)
	if err != nil {
		t.Fatal(err)
	}
	st, err := ps.Load()
	if err != nil {
		t.Fatal(err)
	}
	return st.Inbound
}

func countKey(reqs []pairing.Request, k identity.PublicKey) int {
	n := 0
	for _, r := range reqs {
		if r.Key == k.String() {
			n++
		}
	}
	return n
}

func lineWith(text, part string) string {
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, part) {
			return l
		}
	}
	return ""
}

// A session id with an invisible or line-breaking character is refused
// wherever one comes in: an agent does not start under it, and a knock
// whose reply route names one is discarded instead of stored.
func TestSessionIdsWithFormatCharactersAreRefused(t *testing.T) {
	url := bustest.Start(t, nil)
	victim := newParty(t)
	for _, bad := range []string{"v\u202e1", "v\u200b1", "v\u20281", "\ufeffv1"} {
		_, err := agent.New(agent.Config{KeyPath: victim.keyPath, PeersPath: victim.peersPath, URLs: []string{url},
			Session: bad, StateRoot: t.TempDir()})
		if err == nil || !strings.Contains(err.Error(), "session id") {
			t.Errorf("agent with session %q: %v", bad, err)
		}
	}
	v := start(t, victim, "v1", url, nil)
	s := newStranger(testutil.NumberedSigner(t, 7000))
	s.session = "s\u202egnp.exe"
	post(t, url, v.route(), s.sign(t, victim.key(), identity.KindPairRequest, "sneaky", nil))
	drained(t, url, v.route())
	if st := pendingRequests(t, v); len(st) != 0 {
		t.Errorf("a knock with a format character in its reply route was stored: %+v", st)
	}
	if !strings.Contains(v.logs.String(), "reason=no_reply_route") {
		t.Errorf("the discarded knock was not logged:\n%s", v.logs)
	}
}
