package identity

import (
	"bytes"
	"crypto/ed25519"
	"encoding/binary"
	"encoding/json"
	"testing"
)

// originalVerify checks an announcement's JSON as a client of the original
// format does, on its own from the published encoding: it reads the known
// keys only, rebuilds the v1 signed bytes, verifies them, and applies the
// title rule (an unsigned title fails).
func originalVerify(t *testing.T, data []byte) bool {
	t.Helper()
	var a struct {
		PubKey  string `json:"pubkey"`
		Name    string `json:"name"`
		Session struct {
			SessionID string `json:"session_id"`
			Title     string `json:"title"`
			Cwd       string `json:"cwd"`
			GitRoot   string `json:"git_root"`
			Summary   string `json:"summary"`
		} `json:"session"`
		TS       uint64  `json:"ts"`
		Sig      string  `json:"sig"`
		TitleSig *string `json:"title_sig"`
	}
	if err := json.Unmarshal(data, &a); err != nil {
		t.Fatal(err)
	}
	pub, err1 := DecodeBase64(a.PubKey)
	sig, err2 := DecodeBase64(a.Sig)
	if err1 != nil || err2 != nil {
		return false
	}
	b := []byte("interlink-announce-v1\x00")
	b = append(b, pub...)
	for _, s := range []string{a.Name, a.Session.SessionID, a.Session.Cwd, a.Session.GitRoot, a.Session.Summary} {
		b = binary.LittleEndian.AppendUint32(b, uint32(len(s)))
		b = append(b, s...)
	}
	b = binary.LittleEndian.AppendUint64(b, a.TS)
	if !ed25519.Verify(pub, b, sig) {
		return false
	}
	return a.TitleSig != nil || a.Session.Title == ""
}

func capsSigner(t *testing.T) *Signer {
	t.Helper()
	s, err := NewSigner(make([]byte, SeedSize))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

var capsSession = SessionInfo{SessionID: "s1", Cwd: "/w", GitRoot: "w"}

// The capabilities extension leaves the announcement acceptable to a
// client of the original format, and leaves an announcement without it
// byte for byte what it was.
func TestAnnouncementWithCapsStaysValidForTheOriginalAndWithoutCapsUnchanged(t *testing.T) {
	s := capsSigner(t)
	plain, err := Marshal(s.Announce("alice", capsSession, 1700000000000))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"pubkey":"O2onvM62pC1io6jQKm8Nc2UyFXcd4kOmOsBIoYtZ2ik","name":"alice","session":{"session_id":"s1","cwd":"/w","git_root":"w","summary":""},"ts":1700000000000,"sig":"XRKjQDACLFESrMrCz77NBJ-wZo3F4wuJ4FSuAdEFzRkmDBPqHb12HPfXdkTx8gSEWzNrLKMAIp_o1tu7nRzxDA"}`
	if string(plain) != want {
		t.Errorf("announcement without caps\n%s\nwant\n%s", plain, want)
	}
	withCaps, err := Marshal(s.AnnounceCaps("alice", capsSession, 1700000000000, []string{CapSealed}))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(withCaps, []byte(want[:len(want)-1])) {
		t.Errorf("the extension changed the original fields: %s", withCaps)
	}
	for name, data := range map[string][]byte{"plain": plain, "caps": withCaps} {
		if !originalVerify(t, data) {
			t.Errorf("%s: a client of the original format refuses %s", name, data)
		}
	}
}

func TestVerifiedCapsAcceptsOnlyTheKeysOwnListForThisAnnouncement(t *testing.T) {
	s := capsSigner(t)
	other, err := NewSigner(bytes.Repeat([]byte{7}, SeedSize))
	if err != nil {
		t.Fatal(err)
	}
	good := s.AnnounceCaps("alice", capsSession, 1700000000000, []string{CapSealed})
	roundTrip := func(a Announcement) Announcement {
		b, err := Marshal(a)
		if err != nil {
			t.Fatal(err)
		}
		out, err := DecodeAnnouncement(b)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	rt := roundTrip(good)
	if caps, ok := rt.VerifiedCaps(); !ok || !HasCap(caps, CapSealed) {
		t.Fatalf("own signed list: %v %v", caps, ok)
	}
	empty := roundTrip(s.AnnounceCaps("alice", capsSession, 1700000000000, nil))
	if caps, ok := empty.VerifiedCaps(); !ok || len(caps) != 0 {
		t.Errorf("a signed empty list: %v %v, want an empty verified list", caps, ok)
	}
	later := s.AnnounceCaps("alice", capsSession, 1700000000001, nil)
	sibling := s.AnnounceCaps("alice", SessionInfo{SessionID: "s2"}, 1700000000000, nil)
	foreign := other.AnnounceCaps("mallory", capsSession, 1700000000000, []string{CapSealed})
	for name, edit := range map[string]func(a *Announcement){
		"stripped":               func(a *Announcement) { a.Caps, a.CapsSig = nil, "" },
		"list without signature": func(a *Announcement) { a.CapsSig = "" },
		"capability added":       func(a *Announcement) { a.Caps = append(a.Caps, "receipts-v1") },
		"list emptied":           func(a *Announcement) { a.Caps = nil },
		"added to an empty list": func(a *Announcement) { a.Caps, a.CapsSig = []string{CapSealed}, empty.CapsSig },
		"moved to a later one":   func(a *Announcement) { *a = later; a.Caps, a.CapsSig = good.Caps, good.CapsSig },
		"moved to a sibling":     func(a *Announcement) { *a = sibling; a.Caps, a.CapsSig = good.Caps, good.CapsSig },
		"another key's list":     func(a *Announcement) { a.Caps, a.CapsSig = foreign.Caps, foreign.CapsSig },
		"bad main signature":     func(a *Announcement) { a.Name = "eve" },
		"signature not base64":   func(a *Announcement) { a.CapsSig = "!!" },
	} {
		a := good
		a.Caps = append([]string(nil), good.Caps...)
		edit(&a)
		got := roundTrip(a)
		if caps, ok := got.VerifiedCaps(); ok && HasCap(caps, CapSealed) {
			t.Errorf("%s: verified as sealing", name)
		}
	}
}

// Junk in the extension never spoils the announcement itself.
func TestMalformedCapsAreDroppedAndTheAnnouncementStillVerifies(t *testing.T) {
	s := capsSigner(t)
	plain, err := Marshal(s.Announce("alice", capsSession, 1700000000000))
	if err != nil {
		t.Fatal(err)
	}
	for _, extra := range []string{`"caps":"sealed-v1","caps_sig":"x"`, `"caps":[1,2],"caps_sig":"x"`,
		`"caps":["sealed-v1"],"caps_sig":7`, `"caps":null,"caps_sig":null`} {
		data := append(append(bytes.Clone(plain[:len(plain)-1]), ','), extra+"}"...)
		a, err := DecodeAnnouncement(data)
		if err != nil {
			t.Errorf("%s: %v", extra, err)
			continue
		}
		if _, err := a.Verify(); err != nil {
			t.Errorf("%s: announcement no longer verifies: %v", extra, err)
		}
		if _, ok := a.VerifiedCaps(); ok {
			t.Errorf("%s: verified caps", extra)
		}
	}
}
