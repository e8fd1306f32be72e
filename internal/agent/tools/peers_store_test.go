package tools

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/interlink-go/interlink/internal/identity"
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
	f.p = &Peers{Peers: peers, Signer: me, Name: "bob", Now: time.Now, Queued: func() {}}
	f.s = &PeersSession{Route: route.New(me.Public().String(), "b1"), Pairing: ps}
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

// A full control queue refuses before anything is authorized; a failing
// final write leaves the peer trusted and says so in a result flagged
// isError; accepting again completes the change.
func TestAcceptPairSaysHowFarItGot(t *testing.T) {
	f := newPeersFixture(t)
	ctx := context.Background()
	alice := testutil.Signer(t, 0xa1).Public()
	f.knock(t, alice)
	accept := fingerprintArgs{Fingerprint: alice.String()}

	// A full control queue.
	for i := range pairing.QueueCap {
		target := testutil.NumberedSigner(t, i).Public()
		tr := route.New(target.String(), "s")
		req := pairing.Request{Key: target.String(), Name: fmt.Sprint("t", i), RequestID: fmt.Sprintf("%032x", i), ReplyTo: tr.String()}
		if _, err := f.s.Pairing.Request(req, func(id string) (pairing.Job, error) {
			return pairing.RequestMessage(f.p.Signer, target, tr, "bob", id, f.s.Route, time.Now())
		}); err != nil {
			t.Fatal(err)
		}
	}
	_, err := f.p.acceptPair(ctx, f.s, accept)
	if err == nil || !strings.HasPrefix(err.Error(), "local state:") || !errors.Is(err, pairing.ErrQueueFull) {
		t.Errorf("accept_pair with a full queue: %v, want a local-state error for the full queue", err)
	}
	if got, _ := f.p.listPeers(ctx, f.s, none{}); got != "no peers authorized" {
		t.Errorf("peers after the refused accept: %q", got)
	}

	// Room in the queue again, but the pairing file cannot be written.
	st, err := f.s.Pairing.Load()
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, j := range st.Queued {
		ids = append(ids, j.Msg.MsgID)
	}
	if err := f.s.Pairing.Sent(ids...); err != nil {
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

	f.fail.Store(false)
	if got, err := f.p.acceptPair(ctx, f.s, accept); err != nil || !strings.Contains(got, "accepted") {
		t.Errorf("repeated accept_pair = %q, %v", got, err)
	}
	if got, _ := f.p.listPairRequests(ctx, f.s, none{}); got != "no pending pairing requests" {
		t.Errorf("after the repeat: %q", got)
	}
}
