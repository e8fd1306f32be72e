package pairing_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/interlink-go/interlink/internal/gate"
	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/outbox"
	"github.com/interlink-go/interlink/internal/pairing"
	"github.com/interlink-go/interlink/internal/policy"
	"github.com/interlink-go/interlink/internal/route"
)

var now = time.UnixMilli(1_700_000_000_000)

// side is one identity and session with its own peers.json, pairing state
// and trust gate, wired the way the agent wires them.
type side struct {
	signer  *identity.Signer
	route   route.Route
	name    string // roster name it claims
	root    string // state root
	peers   *policy.Store
	pairing *pairing.Store
	outbox  *outbox.Outbox
	gate    *gate.Gate
}

func newSide(t *testing.T, seed byte, name, session string) *side {
	t.Helper()
	b := make([]byte, identity.SeedSize)
	b[0] = seed
	s, err := identity.NewSigner(b)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	peersPath := filepath.Join(dir, "peers.json")
	if err := os.WriteFile(peersPath, []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	peers, err := policy.Open(peersPath)
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(dir, "state")
	ps, err := pairing.Open(root, s.Public(), session, nil)
	if err != nil {
		t.Fatal(err)
	}
	ob, err := outbox.Open(root, s.Public(), session, nil, s, nil)
	if err != nil {
		t.Fatal(err)
	}
	return &side{
		signer: s, route: route.New(s.Public().String(), session), name: name, root: root,
		peers: peers, pairing: ps, outbox: ob,
		gate: gate.New(s.Public(), &gate.Options{Now: func() time.Time { return now }}),
	}
}

func (s *side) decide(t *testing.T, m identity.Message) gate.Decision {
	t.Helper()
	pol, err := s.peers.Load()
	if err != nil {
		t.Fatal(err)
	}
	d, err := s.gate.Decide(&m, pol)
	if err != nil {
		t.Fatalf("gate: %v", err)
	}
	return d
}

// request makes s knock on target's session, as request_pair does, with
// the operator typing typed as the target.
func (s *side) request(t *testing.T, target *side, typed, id string) pairing.Job {
	t.Helper()
	var job pairing.Job
	_, err := s.pairing.Request(t.Context(), pairing.Request{
		Key: target.signer.Public().String(), Name: typed, RequestID: id, ReplyTo: target.route.String(),
	}, s.outbox, func(reqID string) (pairing.Job, error) {
		var err error
		job, err = pairing.RequestMessage(s.signer, target.signer.Public(), target.route, s.name, reqID, s.route, now)
		return job, err
	})
	if err != nil {
		t.Fatal(err)
	}
	return job
}

// receiveKnock runs a knock through the gate and records it.
func (s *side) receiveKnock(t *testing.T, m identity.Message) {
	t.Helper()
	d := s.decide(t, m)
	if d.Outcome != gate.Knock {
		t.Fatalf("outcome %v, want knock", d.Outcome)
	}
	req, err := pairing.InboundFromKnock(d.Sender, &d.Message)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.pairing.Receive(req); err != nil {
		t.Fatal(err)
	}
}

// accept runs accept_pair for the pending request with fingerprint fp and
// returns the petname the new peer got and the queued confirmation.
func (s *side) accept(t *testing.T, fp, msgID string) (string, pairing.Job) {
	t.Helper()
	req, err := s.pairing.Find(fp)
	if err != nil {
		t.Fatal(err)
	}
	job, err := pairing.AcceptMessage(s.signer, req, s.name, s.route, now, msgID)
	if err != nil {
		t.Fatal(err)
	}
	key, err := identity.ParsePublicKey(req.Key)
	if err != nil {
		t.Fatal(err)
	}
	var petname string
	err = s.pairing.Accept(t.Context(), req, job, s.outbox, func() error {
		petname, err = s.peers.AddAccepted(req.Name, key)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return petname, job
}

// handleAccept is the requester's handling of a pair_accept: act only on a
// matching outstanding request, then retire it. It returns the petname
// used, or an error from the policy, and whether a request matched.
func (s *side) handleAccept(t *testing.T, m identity.Message) (string, bool, error) {
	t.Helper()
	d := s.decide(t, m)
	if d.Outcome != gate.PairAccept {
		t.Fatalf("outcome %v, want pair_accept", d.Outcome)
	}
	req, ok, err := s.pairing.PendingAccept(d.Sender.String(), d.Message.InReplyTo)
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		return "", false, nil
	}
	name, addErr := s.peers.AddForPairing(req.Name, d.Sender)
	if addErr != nil && !errors.Is(addErr, policy.ErrConflict) {
		t.Fatal(addErr)
	}
	if err := s.pairing.Complete(req.Key, req.RequestID); err != nil {
		t.Fatal(err)
	}
	return name, true, addErr
}

func fileBytes(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return b
}

// TestHandshake pairs two identities through knock and accept, with both
// sides restarted (their stores reopened) in between, and then shows an
// ordinary message getting through where it was refused before.
func TestHandshake(t *testing.T) {
	alice := newSide(t, 1, "alice", "a-1")
	bob := newSide(t, 2, "bob", "b-1")

	hello := identity.Message{To: bob.signer.Public().String(), Text: "hi", TS: identity.Millis(now), MsgID: "m0", ReplyTo: alice.route.String()}
	if err := alice.signer.SignMessage(&hello); err != nil {
		t.Fatal(err)
	}
	pol, _ := bob.peers.Load()
	if _, err := bob.gate.Decide(&hello, pol); !errors.Is(err, gate.ErrNotAllowlisted) {
		t.Fatalf("before pairing: %v, want ErrNotAllowlisted", err)
	}

	knock := alice.request(t, bob, bob.signer.Public().Fingerprint(), "k1")
	if knock.Route != bob.route.String() {
		t.Fatalf("knock routed to %s, want %s", knock.Route, bob.route)
	}
	bob.receiveKnock(t, knock.Msg)

	// Bob's session restarts before the operator decides.
	var err error
	if bob.pairing, err = pairing.Open(bob.root, bob.signer.Public(), bob.route.Session, nil); err != nil {
		t.Fatal(err)
	}
	petname, confirm := bob.accept(t, alice.signer.Public().Fingerprint(), "a1")
	if petname != "alice" {
		t.Errorf("accepted as %q, want the claimed name alice", petname)
	}
	if confirm.Route != alice.route.String() || confirm.Msg.InReplyTo != "k1" {
		t.Fatalf("confirmation to %s in reply to %s", confirm.Route, confirm.Msg.InReplyTo)
	}

	name, matched, err := alice.handleAccept(t, confirm.Msg)
	if err != nil || !matched || name != bob.signer.Public().Fingerprint() {
		t.Fatalf("requester: name %q matched %v err %v", name, matched, err)
	}
	if st, _ := alice.pairing.Load(); len(st.Outbound) != 0 {
		t.Errorf("request not retired: %+v", st.Outbound)
	}

	pol, _ = bob.peers.Load()
	d, err := bob.gate.Decide(&hello, pol)
	if err != nil || d.Outcome != gate.Deliver || d.Petname != "alice" {
		t.Fatalf("after pairing: %v %q %v", d.Outcome, d.Petname, err)
	}
}

// TestPairAcceptMatching covers when an acceptance changes anything.
func TestPairAcceptMatching(t *testing.T) {
	t.Run("no outstanding request", func(t *testing.T) {
		alice, bob := newSide(t, 1, "alice", "a-1"), newSide(t, 2, "bob", "b-1")
		before := fileBytes(t, alice.peers.Path())
		m := acceptFrom(t, bob, alice, "x1", "k1")
		if _, matched, _ := alice.handleAccept(t, m); matched {
			t.Fatal("an unsolicited acceptance matched")
		}
		if !bytes.Equal(before, fileBytes(t, alice.peers.Path())) {
			t.Error("peers.json changed")
		}
		if b := fileBytes(t, alice.pairing.Path()); b != nil {
			t.Errorf("pairing state written: %s", b)
		}
	})
	t.Run("wrong in_reply_to", func(t *testing.T) {
		alice, bob := newSide(t, 1, "alice", "a-1"), newSide(t, 2, "bob", "b-1")
		alice.request(t, bob, "bob", "k1")
		if _, matched, _ := alice.handleAccept(t, acceptFrom(t, bob, alice, "x1", "k-other")); matched {
			t.Fatal("an acceptance of another request matched")
		}
		if pol, _ := alice.peers.Load(); pol.Len() != 0 {
			t.Error("peer added")
		}
	})
	t.Run("no in_reply_to matches by key", func(t *testing.T) {
		alice, bob := newSide(t, 1, "alice", "a-1"), newSide(t, 2, "bob", "b-1")
		alice.request(t, bob, "bob", "k1")
		name, matched, err := alice.handleAccept(t, acceptFrom(t, bob, alice, "x1", ""))
		if !matched || err != nil || name != "bob" {
			t.Fatalf("matched %v name %q err %v", matched, name, err)
		}
	})
	t.Run("already a peer keeps its petname", func(t *testing.T) {
		alice, bob := newSide(t, 1, "alice", "a-1"), newSide(t, 2, "bob", "b-1")
		if err := alice.peers.Add("bobby", bob.signer.Public()); err != nil {
			t.Fatal(err)
		}
		alice.request(t, bob, "bob", "k1")
		name, matched, err := alice.handleAccept(t, acceptFrom(t, bob, alice, "x1", "k1"))
		if !matched || err != nil || name != "bobby" {
			t.Fatalf("matched %v name %q err %v", matched, name, err)
		}
		if st, _ := alice.pairing.Load(); len(st.Outbound) != 0 {
			t.Error("request not retired")
		}
	})
}

// TestNameConflicts: on the accepting side a claimed name that is taken
// yields name-2; on the requesting side a taken name changes nothing and
// retires the request.
func TestNameConflicts(t *testing.T) {
	alice, bob := newSide(t, 1, "alice", "a-1"), newSide(t, 2, "bob", "b-1")
	other := newSide(t, 3, "other", "o-1")
	if err := bob.peers.Add("alice", other.signer.Public()); err != nil {
		t.Fatal(err)
	}
	if err := alice.peers.Add("bob", other.signer.Public()); err != nil {
		t.Fatal(err)
	}
	bob.receiveKnock(t, alice.request(t, bob, "bob", "k1").Msg)
	petname, confirm := bob.accept(t, alice.signer.Public().Fingerprint(), "a1")
	if petname != "alice-2" {
		t.Fatalf("accepted as %q, want alice-2", petname)
	}
	pol, _ := bob.peers.Load()
	if k, _ := pol.Key("alice"); k != other.signer.Public() {
		t.Error("the existing petname moved to another key")
	}

	before := fileBytes(t, alice.peers.Path())
	_, matched, err := alice.handleAccept(t, confirm.Msg)
	if !matched || !errors.Is(err, policy.ErrConflict) {
		t.Fatalf("matched %v err %v, want a conflict", matched, err)
	}
	if !bytes.Equal(before, fileBytes(t, alice.peers.Path())) {
		t.Error("peers.json changed on a conflict")
	}
	if st, _ := alice.pairing.Load(); len(st.Outbound) != 0 {
		t.Error("request not retired after the conflict")
	}
}

func acceptFrom(t *testing.T, from, to *side, msgID, inReplyTo string) identity.Message {
	t.Helper()
	m := identity.Message{
		To: to.signer.Public().String(), Text: from.name, TS: identity.Millis(now), MsgID: msgID,
		Kind: identity.KindPairAccept, InReplyTo: inReplyTo, ReplyTo: from.route.String(),
	}
	if err := from.signer.SignMessage(&m); err != nil {
		t.Fatal(err)
	}
	return m
}
