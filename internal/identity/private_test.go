package identity

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

var privateInfo = SessionInfo{SessionID: "s1", Cwd: "/home/alice/secret", GitRoot: "secret", Summary: "plans"}

func privateJSON(t *testing.T, a Announcement) []byte {
	t.Helper()
	b, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestPrivateExtensionVerifiesAndNamesItsReaders(t *testing.T) {
	alice, bob, carol := mustSigner(t, aliceKeyFile), mustSigner(t, bobKeyFile), seededSigner(t, 7)
	a := alice.AnnouncePrivate("alice", privateInfo, testTS, []string{CapSealed}, []PublicKey{bob.Public(), bob.Public(), alice.Public()}, true)
	if len(a.Readers) != 1 {
		t.Fatalf("readers = %v, want bob once and not the own key", a.Readers)
	}
	data := privateJSON(t, a)
	if !originalVerify(t, data) {
		t.Fatal("the original's verification fails on an announcement with the extension")
	}
	_, p, present, err := DecodePrivate(data)
	if err != nil || !present {
		t.Fatalf("DecodePrivate = %v, present %v", err, present)
	}
	if !p.Reads(alice.Public()) || !p.Reads(bob.Public()) || p.Reads(carol.Public()) {
		t.Fatalf("Reads: alice %v bob %v carol %v; want true true false", p.Reads(alice.Public()), p.Reads(bob.Public()), p.Reads(carol.Public()))
	}
	if !p.Discoverable {
		t.Fatal("discoverable lost")
	}
	pub := privateJSON(t, p.Public)
	if !originalVerify(t, pub) {
		t.Fatalf("the public variant does not verify as the original's: %s", pub)
	}
	for _, secret := range []string{privateInfo.Cwd, privateInfo.GitRoot, privateInfo.Summary, "readers", "private_sig"} {
		if strings.Contains(string(pub), secret) {
			t.Fatalf("the public variant holds %q: %s", secret, pub)
		}
	}
	back, err := DecodeAnnouncement(pub)
	if err != nil {
		t.Fatal(err)
	}
	if caps, ok := back.VerifiedCaps(); !ok || !HasCap(caps, CapSealed) {
		t.Fatalf("the public variant's caps do not verify: %v %v", caps, ok)
	}
}

func TestPrivateExtensionAbsentIsNotPresent(t *testing.T) {
	a := mustSigner(t, aliceKeyFile).AnnounceCaps("alice", privateInfo, testTS, []string{CapSealed})
	_, p, present, err := DecodePrivate(privateJSON(t, a))
	if err != nil || present || p != nil {
		t.Fatalf("DecodePrivate = %v, %v, %v; want no extension and no error", p, present, err)
	}
}

// Every way of changing, moving or half-writing the extension is refused.
func TestPrivateExtensionRefusesForgeries(t *testing.T) {
	alice, bob, carol := mustSigner(t, aliceKeyFile), mustSigner(t, bobKeyFile), seededSigner(t, 7)
	readers := []PublicKey{bob.Public()}
	good := alice.AnnouncePrivate("alice", privateInfo, testTS, []string{CapSealed}, readers, false)
	later := alice.AnnouncePrivate("alice", privateInfo, testTS+1, []string{CapSealed}, readers, false)
	sibling := alice.AnnouncePrivate("alice", SessionInfo{SessionID: "s2"}, testTS, []string{CapSealed}, readers, false)
	other := alice.AnnouncePrivate("alice", privateInfo, testTS, []string{CapSealed}, []PublicKey{carol.Public()}, false)
	mallory := carol.AnnouncePrivate("alice", privateInfo, testTS, []string{CapSealed}, readers, false)
	cases := map[string]func(a *Announcement){
		"public_sig moved from a later announcement":  func(a *Announcement) { a.PublicSig = later.PublicSig },
		"public_sig moved from a sibling session":     func(a *Announcement) { a.PublicSig = sibling.PublicSig },
		"private_sig moved from a later announcement": func(a *Announcement) { a.PrivateSig = later.PrivateSig },
		"readers changed":              func(a *Announcement) { a.Readers = other.Readers },
		"reader added":                 func(a *Announcement) { a.Readers = append(a.Readers, other.Readers...) },
		"readers emptied":              func(a *Announcement) { a.Readers = nil },
		"discoverable turned on":       func(a *Announcement) { a.Discoverable = true },
		"private_sig removed":          func(a *Announcement) { a.PrivateSig = "" },
		"public_sig removed":           func(a *Announcement) { a.PublicSig = "" },
		"private_sig of another key":   func(a *Announcement) { a.PrivateSig = mallory.PrivateSig },
		"public_caps_sig moved":        func(a *Announcement) { a.PublicCapsSig = later.PublicCapsSig },
		"public_caps_sig without caps": func(a *Announcement) { a.Caps, a.CapsSig = nil, "" },
		"reader tag of the wrong size": func(a *Announcement) { a.Readers = []string{"AAAA"} },
	}
	for name, edit := range cases {
		t.Run(name, func(t *testing.T) {
			a := good
			a.Readers = append([]string{}, good.Readers...)
			edit(&a)
			_, _, present, err := DecodePrivate(privateJSON(t, a))
			if !present || !errors.Is(err, ErrPrivate) {
				t.Fatalf("DecodePrivate = present %v, %v; want ErrPrivate", present, err)
			}
			// What is wrong is there without the prefix, for a relay
			// that explains the refusal in its own words.
			pe, ok := errors.AsType[*PrivateError](err)
			if !ok || pe.Reason() == "" || err.Error() != "identity: privacy extension: "+pe.Reason() {
				t.Fatalf("err = %#v (%v), want a *PrivateError whose reason follows the prefix", err, err)
			}
		})
	}
	if _, _, _, err := DecodePrivate(privateJSON(t, good)); err != nil {
		t.Fatalf("the unchanged announcement: %v", err)
	}
}

func TestPrivateExtensionRefusesMalformedMembers(t *testing.T) {
	good := privateJSON(t, mustSigner(t, aliceKeyFile).AnnouncePrivate("alice", privateInfo, testTS, nil, nil, false))
	for name, member := range map[string]string{
		"readers not a list":     `"readers":"x"`,
		"readers null":           `"readers":null`,
		"discoverable a string":  `"discoverable":"yes"`,
		"discoverable null":      `"discoverable":null`,
		"public_caps_sig number": `"public_caps_sig":5`,
		"too many readers":       `"readers":[` + strings.Repeat(`"AAAAAAAAAAAAAAAA",`, MaxReaders) + `"AAAAAAAAAAAAAAAA"]`,
	} {
		t.Run(name, func(t *testing.T) {
			data := append(append([]byte(`{`), member...), ',')
			data = append(data, good[1:]...)
			if _, _, _, err := DecodePrivate(data); !errors.Is(err, ErrPrivate) && !errors.Is(err, ErrDecode) {
				t.Fatalf("DecodePrivate(%s) = %v; want a refusal", member, err)
			}
		})
	}
	// A lone member of the extension makes it present and incomplete.
	lone := append([]byte(`{"discoverable":true,`), privateJSON(t, mustSigner(t, aliceKeyFile).Announce("alice", privateInfo, testTS))[1:]...)
	if _, _, present, err := DecodePrivate(lone); !present || !errors.Is(err, ErrPrivate) {
		t.Fatalf("a lone discoverable: present %v, %v", present, err)
	}
}
