package tools

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/outbox"
	"github.com/interlink-go/interlink/internal/pairing"
	"github.com/interlink-go/interlink/internal/policy"
	"github.com/interlink-go/interlink/internal/route"
	"github.com/interlink-go/interlink/internal/statefile"
	"github.com/interlink-go/interlink/internal/testutil"
)

// The peer tools against a pairing store whose writes can be made to fail:
// accept_pair changes two files, peers.json and the pairing state, and must
// say exactly how far it got.

// peersFixture is a Peers group and a session whose pairing writes fail
// while fail is set.
type peersFixture struct {
	p    *Peers
	s    *PeersSession
	fail atomic.Bool
}

func newPeersFixture(t *testing.T) *peersFixture {
	t.Helper()
	dir := t.TempDir()
	peersPath := filepath.Join(dir, "peers.json")
	if err := os.WriteFile(peersPath, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	peers, err := policy.Open(peersPath)
	if err != nil {
		t.Fatal(err)
	}
	me := testutil.Signer(t, 0x42)
	f := &peersFixture{}
	write := func(path string, data []byte) error {
		if f.fail.Load() {
			return errors.New("disk full (test)")
		}
		return statefile.WriteAtomic(path, data)
	}
	ps, err := pairing.Open(dir, me.Public(), "b1", &pairing.Options{Write: write})
	if err != nil {
		t.Fatal(err)
	}
	ob, err := outbox.Open(dir, me.Public(), "b1", nil, me, nil)
	if err != nil {
		t.Fatal(err)
	}
	f.p = &Peers{Peers: peers, Signer: me, Name: "bob", Now: time.Now}
	f.s = &PeersSession{Route: route.New(me.Public().String(), "b1"), Pairing: ps, Outbox: ob}
	return f
}

// knock stores a pending request from key, as the inbound loop would.
func (f *peersFixture) knock(t *testing.T, key identity.PublicKey) {
	t.Helper()
	req := pairing.Request{Key: key.String(), Name: "alice", RequestID: strings.Repeat("0", 32), ReplyTo: key.String() + "#a1"}
	if _, err := f.s.Pairing.Receive(req); err != nil {
		t.Fatal(err)
	}
}

// An outbox that cannot take the confirmation refuses before anything is
// authorized; a failing final write leaves the peer trusted, takes the
// confirmation back and says so in a result flagged isError; accepting
// again completes the change, with one confirmation on its way.
func TestAcceptPairSaysHowFarItGot(t *testing.T) {
	f := newPeersFixture(t)
	ctx := context.Background()
	alice := testutil.Signer(t, 0xa1).Public()
	f.knock(t, alice)
	accept := fingerprintArgs{Fingerprint: alice.String()}

	// An outbox file that cannot be read takes nothing.
	if err := os.MkdirAll(filepath.Dir(f.s.Outbox.Path()), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f.s.Outbox.Path(), []byte("not an outbox"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := f.p.acceptPair(ctx, f.s, accept)
	if err == nil || !strings.HasPrefix(err.Error(), "local state:") || !errors.Is(err, outbox.ErrCorrupt) {
		t.Errorf("accept_pair with an unreadable outbox: %v, want a local-state error naming it", err)
	}
	if got, _ := f.p.listPeers(ctx, f.s, none{}); got != "no peers authorized" {
		t.Errorf("peers after the refused accept: %q", got)
	}

	// The outbox works again, but the pairing file cannot be written.
	if err := os.Remove(f.s.Outbox.Path()); err != nil {
		t.Fatal(err)
	}
	f.fail.Store(true)
	_, err = f.p.acceptPair(ctx, f.s, accept)
	tf, ok := errors.AsType[*toolFailure](err)
	if !ok || !strings.Contains(tf.text, "trusted locally") || !strings.Contains(tf.text, "disk full") {
		t.Errorf("accept_pair with a failing write: %v, want a tool failure saying the peer is trusted", err)
	}
	if got, _ := f.p.listPeers(ctx, f.s, none{}); !strings.Contains(got, alice.String()) {
		t.Errorf("peer not authorized after the partial accept: %q", got)
	}
	if pend, err := f.s.Outbox.Pending(); err != nil || len(pend) != 0 {
		t.Errorf("outbox after the partial accept: %+v, %v; want the confirmation taken back", pend, err)
	}

	f.fail.Store(false)
	if got, err := f.p.acceptPair(ctx, f.s, accept); err != nil || !strings.Contains(got, "accepted") {
		t.Errorf("repeated accept_pair = %q, %v", got, err)
	}
	if got, _ := f.p.listPairRequests(ctx, f.s, none{}); got != "no pending pairing requests" {
		t.Errorf("after the repeat: %q", got)
	}
	pend, err := f.s.Outbox.Pending()
	if err != nil || len(pend) != 1 || pend[0].Route != alice.String()+"#a1" {
		t.Errorf("outbox after the repeat: %+v, %v; want one confirmation to alice's session", pend, err)
	}
}
