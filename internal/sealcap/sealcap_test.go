package sealcap

import (
	"bytes"
	"context"
	"os"
	"testing"

	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/seal"
)

func signer(t *testing.T, b byte) *identity.Signer {
	t.Helper()
	s, err := identity.NewSigner(bytes.Repeat([]byte{b}, identity.SeedSize))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func seals(t *testing.T, s *Store, k identity.PublicKey) bool {
	t.Helper()
	yes, err := s.Seals(k)
	if err != nil {
		t.Fatal(err)
	}
	return yes
}

// Only a newer statement saying the opposite changes an entry; the file
// outlives the Store, and a stale or repeated statement writes nothing.
func TestOnlyANewerOppositeStatementChangesWhatIsKnown(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	own, peer := signer(t, 1).Public(), signer(t, 2).Public()
	s, err := Open(root, own, nil)
	if err != nil {
		t.Fatal(err)
	}
	if seals(t, s, peer) {
		t.Fatal("an unknown key seals")
	}
	steps := []struct {
		ts      uint64
		sealed  bool
		changed bool
		after   bool
	}{
		{100, true, true, true},   // learned
		{200, true, false, true},  // same news, later: nothing written
		{50, false, false, true},  // an old statement saying no
		{100, false, false, true}, // as old as the one held
		{300, false, true, false}, // a newer withdrawal
		{250, true, false, false}, // older than the withdrawal
		{400, true, true, true},   // sealing again
	}
	for i, st := range steps {
		changed, err := s.Learn(ctx, peer, st.ts, st.sealed)
		if err != nil {
			t.Fatal(err)
		}
		if changed != st.changed || seals(t, s, peer) != st.after {
			t.Errorf("step %d (ts %d, sealed %v): changed %v, seals %v; want %v, %v",
				i, st.ts, st.sealed, changed, seals(t, s, peer), st.changed, st.after)
		}
	}
	again, err := Open(root, own, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !seals(t, again, peer) {
		t.Error("what was learned did not survive a new Store")
	}
	other, err := Open(root, signer(t, 3).Public(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if seals(t, other, peer) {
		t.Error("another identity's file says the peer seals")
	}
}

func TestAnAnnouncementWithoutASignedListTeachesNothing(t *testing.T) {
	s, err := Open(t.TempDir(), signer(t, 1).Public(), nil)
	if err != nil {
		t.Fatal(err)
	}
	peer := signer(t, 2).Public()
	if changed, _ := s.LearnAnnouncement(context.Background(), peer, 5, []string{identity.CapSealed}, false); changed || seals(t, s, peer) {
		t.Error("an unsigned list was learned")
	}
	if changed, _ := s.LearnAnnouncement(context.Background(), peer, 5, []string{"other"}, true); !changed || seals(t, s, peer) {
		t.Error("a signed list without sealing: want recorded as not sealing")
	}
}

// Payload seals to a key known to seal, sends any other plain and
// untouched, and never sends plain when the file cannot be read.
func TestPayloadSealsOnlyToKeysKnownToSealAndNeverFallsBackToPlain(t *testing.T) {
	ctx := context.Background()
	me, peer, stranger := signer(t, 1), signer(t, 2), signer(t, 3)
	s, err := Open(t.TempDir(), me.Public(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Learn(ctx, peer.Public(), 1, true); err != nil {
		t.Fatal(err)
	}
	msg := func(to identity.PublicKey) (identity.Message, []byte) {
		m := identity.Message{To: to.String(), Text: "hello", TS: 1700000000000, MsgID: "m1", Kind: identity.KindMessage}
		if err := me.SignMessage(&m); err != nil {
			t.Fatal(err)
		}
		b, err := m.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		return m, b
	}
	m, plain := msg(stranger.Public())
	got, sealed, err := s.Payload(me, &m, plain)
	if err != nil || sealed || !bytes.Equal(got, plain) {
		t.Errorf("to a key not known to seal: sealed %v, err %v, payload changed %v", sealed, err, !bytes.Equal(got, plain))
	}
	m, plain = msg(peer.Public())
	got, sealed, err = s.Payload(me, &m, plain)
	if err != nil || !sealed || bytes.Contains(got, []byte("hello")) {
		t.Fatalf("to a sealing key: sealed %v, err %v: %s", sealed, err, got)
	}
	r, err := seal.NewRecipient(peer.Seed())
	if err != nil {
		t.Fatal(err)
	}
	if opened, err := seal.OpenMessage(r, got); err != nil || opened.Text != "hello" {
		t.Errorf("the peer cannot open it: %v", err)
	}
	if err := os.WriteFile(s.Path(), []byte("not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Payload(me, &m, plain); err == nil {
		t.Error("a corrupt file let the message go plain")
	}
	if _, err := s.Learn(ctx, peer.Public(), 9, false); err == nil {
		t.Error("a corrupt file was overwritten")
	}
}

func TestTheFileKeepsAtMostMaxKeysForgettingTheOldestLearned(t *testing.T) {
	s, err := Open(t.TempDir(), signer(t, 1).Public(), nil)
	if err != nil {
		t.Fatal(err)
	}
	d := document{Keys: map[string]Entry{}}
	for i := range MaxKeys {
		var k identity.PublicKey
		k[0], k[1] = byte(i), byte(i>>8)
		d.Keys[k.String()] = Entry{Sealed: true, TS: 1, Learned: uint64(10 + i)}
	}
	var first identity.PublicKey // i = 0: learned first
	b, _ := identity.Marshal(d)
	if err := os.MkdirAll(s.Path()[:len(s.Path())-len("/"+signer(t, 1).Public().String()+".json")], 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(s.Path(), b, 0o600); err != nil {
		t.Fatal(err)
	}
	newcomer := signer(t, 9).Public()
	if _, err := s.Learn(context.Background(), newcomer, 5, true); err != nil {
		t.Fatal(err)
	}
	if !seals(t, s, newcomer) || seals(t, s, first) {
		t.Error("the newcomer was not kept in place of the oldest entry")
	}
}

// The receipts capability follows the rule of the sealing one, apart from
// it: the first statement is kept whatever it says (so "said no" is told
// from "never said"), then only a newer opposite one changes it, and a
// list in an announcement speaks for both.
func TestReceiptsCapabilityIsLearnedApartFromSealing(t *testing.T) {
	ctx := context.Background()
	s, err := Open(t.TempDir(), signer(t, 1).Public(), nil)
	if err != nil {
		t.Fatal(err)
	}
	peer := signer(t, 2).Public()
	check := func(wantYes, wantKnown bool) {
		t.Helper()
		yes, known, err := s.Receipts(peer)
		if err != nil || yes != wantYes || known != wantKnown {
			t.Fatalf("Receipts = %v, %v, %v; want %v, %v", yes, known, err, wantYes, wantKnown)
		}
	}
	check(false, false)
	if _, err := s.LearnAnnouncement(ctx, peer, 100, []string{identity.CapSealed}, true); err != nil {
		t.Fatal(err)
	}
	check(false, true)
	if !seals(t, s, peer) {
		t.Error("sealing not learned from the same list")
	}
	if _, err := s.LearnReceipts(ctx, peer, 99, true); err != nil {
		t.Fatal(err)
	}
	check(false, true) // older than what is held
	if _, err := s.LearnReceipts(ctx, peer, 200, true); err != nil {
		t.Fatal(err)
	}
	check(true, true)
	if _, err := s.LearnAnnouncement(ctx, peer, 150, []string{identity.CapSealed}, true); err != nil {
		t.Fatal(err)
	}
	check(true, true) // a replayed older announcement changes nothing
	if _, err := s.LearnAnnouncement(ctx, peer, 300, []string{identity.CapSealed, identity.CapReceipts}, false); err != nil {
		t.Fatal(err)
	}
	if _, err := s.LearnAnnouncement(ctx, peer, 400, nil, true); err != nil {
		t.Fatal(err)
	}
	check(false, true) // withdrawn by a newer signed list
	if seals(t, s, peer) {
		t.Error("sealing not withdrawn by the same list")
	}
}
