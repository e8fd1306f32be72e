package identity

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func testAnnouncement(tb testing.TB) Announcement {
	tb.Helper()
	return mustSigner(tb, aliceKeyFile).Announce("alice",
		SessionInfo{SessionID: "s1", Cwd: "/w", GitRoot: "w", Summary: "reviewing"}, testTS)
}

func TestAnnouncementTamper(t *testing.T) {
	a := testAnnouncement(t)
	if k, err := a.Verify(); err != nil || k.String() != alicePub {
		t.Fatalf("Verify = %s, %v", k, err)
	}
	for name, edit := range map[string]func(*Announcement){
		"name":       func(a *Announcement) { a.Name = "bob" },
		"session_id": func(a *Announcement) { a.Session.SessionID = "s2" },
		"cwd":        func(a *Announcement) { a.Session.Cwd = "/x" },
		"git_root":   func(a *Announcement) { a.Session.GitRoot = "x" },
		"summary":    func(a *Announcement) { a.Session.Summary = "idle" },
		"ts":         func(a *Announcement) { a.TS++ },
		"pubkey":     func(a *Announcement) { a.PubKey = bobPub },
		"bad pubkey": func(a *Announcement) { a.PubKey = "x" },
		"bad sig":    func(a *Announcement) { a.Sig = a.Sig + "=" },
	} {
		t.Run(name, func(t *testing.T) {
			b := a
			edit(&b)
			if _, err := b.Verify(); !errors.Is(err, ErrSignature) {
				t.Errorf("tampered %s verifies: %v", name, err)
			}
		})
	}
	// A pubkey swap with a signature made by the other key fails too.
	bob := mustSigner(t, bobKeyFile).Announce("alice", a.Session, a.TS)
	swapped := a
	swapped.Sig = bob.Sig
	if _, err := swapped.Verify(); !errors.Is(err, ErrSignature) {
		t.Errorf("signature of another key verifies: %v", err)
	}
}

// TestAnnouncementUnsignedParts: the bus stamps age_ms and older versions
// add title fields; neither is signed and neither breaks verification.
func TestAnnouncementUnsignedParts(t *testing.T) {
	a := testAnnouncement(t)
	data, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), "title") || strings.Contains(string(data), "age_ms") {
		t.Errorf("fresh announcement writes title or age_ms: %s", data)
	}
	var raw map[string]any
	if err := json.Unmarshal(data, &raw); err != nil {
		t.Fatal(err)
	}
	raw["age_ms"] = 12345
	raw["title_sig"] = "AAAA"
	raw["session"].(map[string]any)["title"] = "some title"
	data, _ = json.Marshal(raw)
	b, err := DecodeAnnouncement(data)
	if err != nil {
		t.Fatal(err)
	}
	if b.AgeMS == nil || *b.AgeMS != 12345 {
		t.Errorf("age_ms = %v", b.AgeMS)
	}
	if _, err := b.Verify(); err != nil {
		t.Errorf("announcement with age_ms and title fields: %v", err)
	}
	age := uint64(99)
	b.AgeMS = &age
	if _, err := b.Verify(); err != nil {
		t.Errorf("changed age_ms: %v", err)
	}
	out, _ := json.Marshal(b)
	back, err := DecodeAnnouncement(out)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(b, back); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
}

func TestDecodeAnnouncement(t *testing.T) {
	ok := map[string]string{
		"no session":     `{"pubkey":"k","name":"n","ts":1,"sig":"s"}`,
		"sparse session": `{"pubkey":"k","name":"n","ts":1,"sig":"s","session":{"session_id":"x"}}`,
		"null age":       `{"pubkey":"k","name":"n","ts":1,"sig":"s","age_ms":null}`,
	}
	for name, in := range ok {
		if _, err := DecodeAnnouncement([]byte(in)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	bad := map[string]string{
		"no pubkey":          `{"name":"n","ts":1,"sig":"s"}`,
		"no name":            `{"pubkey":"k","ts":1,"sig":"s"}`,
		"float ts":           `{"pubkey":"k","name":"n","ts":1.5,"sig":"s"}`,
		"session no id":      `{"pubkey":"k","name":"n","ts":1,"sig":"s","session":{"cwd":"/"}}`,
		"session not object": `{"pubkey":"k","name":"n","ts":1,"sig":"s","session":"x"}`,
		"session null":       `{"pubkey":"k","name":"n","ts":1,"sig":"s","session":null}`,
		"negative age":       `{"pubkey":"k","name":"n","ts":1,"sig":"s","age_ms":-1}`,
		"cwd number":         `{"pubkey":"k","name":"n","ts":1,"sig":"s","session":{"session_id":"x","cwd":1}}`,
	}
	for name, in := range bad {
		if _, err := DecodeAnnouncement([]byte(in)); !errors.Is(err, ErrDecode) {
			t.Errorf("%s: %v, want ErrDecode", name, err)
		}
	}
}
