package bus_test

import (
	"encoding/json"
	"maps"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/interlink-go/interlink/internal/bus"
	"github.com/interlink-go/interlink/internal/bus/bustest"
	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/testutil"
	"github.com/interlink-go/interlink/internal/wire"
)

// privateSecrets are the details the sessions of privateRoster announce;
// none may reach a requester who is not the session's key or its reader.
var privateSecrets = []string{"/home/alice/project-x", "alice-repo", "alice plans", "/home/carol/hidden",
	"carol-repo", "carol plans", "/home/dave/old", "dave-repo", "dave plans", "Dave's title"}

// privateRoster announces, signed, on a bus at base: alice (discoverable,
// bob reads), carol (not discoverable, bob reads) and dave (no extension,
// a title added by hand).
type privateRoster struct {
	alice, bob, carol, dave, stranger *identity.Signer
	bodies                            []string // the /announce bodies posted
}

func announcePrivateRoster(t *testing.T, base string) privateRoster {
	t.Helper()
	p := privateRoster{alice: testutil.Signer(t, 1), bob: testutil.Signer(t, 2), carol: testutil.Signer(t, 3),
		dave: testutil.Signer(t, 4), stranger: testutil.Signer(t, 5)}
	caps := []string{identity.CapSealed}
	alice := p.alice.AnnouncePrivate("alice", identity.SessionInfo{SessionID: "a1", Cwd: "/home/alice/project-x", GitRoot: "alice-repo", Summary: "alice plans"},
		uint64(time.Now().UnixMilli()), caps, []identity.PublicKey{p.bob.Public()}, true)
	carol := p.carol.AnnouncePrivate("carol", identity.SessionInfo{SessionID: "c1", Cwd: "/home/carol/hidden", GitRoot: "carol-repo", Summary: "carol plans"},
		uint64(time.Now().UnixMilli()), nil, []identity.PublicKey{p.bob.Public()}, false)
	dave := p.dave.Announce("dave", identity.SessionInfo{SessionID: "d1", Cwd: "/home/dave/old", GitRoot: "dave-repo", Summary: "dave plans"}, uint64(time.Now().UnixMilli()))
	daveBody := strings.Replace(announceBody(t, dave), `"session":{`, `"session":{"title":"Dave's title",`, 1)
	for _, rq := range []rawReq{
		{method: "POST", path: "/announce", body: announceBody(t, alice), signer: p.alice},
		{method: "POST", path: "/announce", body: announceBody(t, carol), signer: p.carol},
		{method: "POST", path: "/announce", body: daveBody, signer: p.dave},
	} {
		if got := rq.do(t, base); got.code != http.StatusAccepted {
			t.Fatalf("announce: %d %s", got.code, got.body)
		}
		p.bodies = append(p.bodies, rq.body)
	}
	return p
}

// rosterOf reads /roster signed by signer (nil: unsigned) and returns the
// raw body and the verified announcements by key#session.
func rosterOf(t *testing.T, base string, signer *identity.Signer) (string, map[string]identity.Announcement) {
	t.Helper()
	got := (rawReq{method: "GET", path: "/roster", signer: signer}).do(t, base)
	if got.code != http.StatusOK {
		t.Fatalf("roster: %d %s", got.code, got.body)
	}
	elems, err := wire.RosterElements([]byte(got.body))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]identity.Announcement{}
	for _, e := range elems {
		a, err := identity.DecodeAnnouncement(e)
		if err != nil {
			t.Fatalf("entry %s: %v", e, err)
		}
		if _, err := a.Verify(); err != nil {
			t.Fatalf("entry %s does not verify: %v", e, err)
		}
		out[a.PubKey+"#"+a.Session.SessionID] = a
	}
	return got.body, out
}

func TestAuthRequiredRosterShowsStrangersNoDetails(t *testing.T) {
	base := bustest.Start(t, &bustest.Options{Auth: bus.AuthRequired})
	p := announcePrivateRoster(t, base)
	aliceRoute := p.alice.Public().String() + "#a1"
	for name, requester := range map[string]*identity.Signer{"unsigned": nil, "a stranger's key": p.stranger} {
		t.Run(name, func(t *testing.T) {
			raw, entries := rosterOf(t, base, requester)
			for _, secret := range append(privateSecrets, "readers", "private_sig", "public_sig", "title") {
				if strings.Contains(raw, secret) || strings.Contains(raw, strings.ReplaceAll(secret, "/", `\/`)) {
					t.Errorf("the roster holds %q: %s", secret, raw)
				}
			}
			if len(entries) != 1 {
				t.Fatalf("entries %v; want alice alone (carol is not discoverable, dave says nothing of his readers)", entries)
			}
			a, ok := entries[aliceRoute]
			if !ok || a.Name != "alice" {
				t.Fatalf("alice missing: %s", raw)
			}
			if caps, ok := a.VerifiedCaps(); !ok || !identity.HasCap(caps, identity.CapSealed) {
				t.Errorf("alice's public entry lost its signed caps: %s", raw)
			}
		})
	}
}

func TestAuthRequiredRosterShowsReadersAndOwnersTheDetails(t *testing.T) {
	base := bustest.Start(t, &bustest.Options{Auth: bus.AuthRequired})
	p := announcePrivateRoster(t, base)
	raw, entries := rosterOf(t, base, p.bob)
	alice, carol := entries[p.alice.Public().String()+"#a1"], entries[p.carol.Public().String()+"#c1"]
	if alice.Session.Cwd != "/home/alice/project-x" || alice.Session.Summary != "alice plans" || carol.Session.GitRoot != "carol-repo" {
		t.Fatalf("bob, a reader of both, sees %s", raw)
	}
	if _, ok := entries[p.dave.Public().String()+"#d1"]; ok {
		t.Errorf("bob sees dave, who names no readers: %s", raw)
	}
	if strings.Contains(raw, "readers") || strings.Contains(raw, "private_sig") {
		t.Errorf("the extension reaches a reader: %s", raw)
	}
	if caps, ok := alice.VerifiedCaps(); !ok || !identity.HasCap(caps, identity.CapSealed) {
		t.Errorf("alice's full entry lost its caps: %s", raw)
	}
	// Each owner sees its own details; alice sees carol not at all.
	raw, entries = rosterOf(t, base, p.alice)
	if entries[p.alice.Public().String()+"#a1"].Session.Cwd != "/home/alice/project-x" || strings.Contains(raw, "carol") {
		t.Errorf("alice's own roster: %s", raw)
	}
	raw, _ = rosterOf(t, base, p.dave)
	if !strings.Contains(raw, "Dave's title") || !strings.Contains(raw, "dave plans") {
		t.Errorf("dave's own roster: %s", raw)
	}
}

func TestAuthRequiredStatusPageShowsNoDetails(t *testing.T) {
	base := bustest.Start(t, &bustest.Options{Auth: bus.AuthRequired})
	announcePrivateRoster(t, base)
	got := (rawReq{method: "GET", path: "/"}).do(t, base)
	if got.code != http.StatusOK || !strings.Contains(got.body, "alice") {
		t.Fatalf("status page: %d %s", got.code, got.body)
	}
	for _, s := range append(privateSecrets, "carol", "dave") {
		if strings.Contains(got.body, s) || strings.Contains(got.body, strings.ReplaceAll(s, "'", "&#39;")) {
			t.Errorf("the status page shows %q", s)
		}
	}
}

// A signed announcement whose privacy extension was changed, moved from
// another announcement or cut short is refused, on a bus that requires
// signatures as on the default one, and nothing of it is stored.
func TestSignedAnnouncementsWithForgedPrivacyExtensionsAreRefused(t *testing.T) {
	for mode, auth := range map[string]bus.Auth{"required": bus.AuthRequired, "optional": bus.AuthOptional} {
		t.Run(mode, func(t *testing.T) {
			base := bustest.Start(t, &bustest.Options{Auth: auth})
			alice, bob, mallory := testutil.Signer(t, 1), testutil.Signer(t, 2), testutil.Signer(t, 6)
			info := identity.SessionInfo{SessionID: "a1", Cwd: "/secret"}
			ts := uint64(time.Now().UnixMilli())
			good := alice.AnnouncePrivate("alice", info, ts, nil, []identity.PublicKey{bob.Public()}, false)
			other := alice.AnnouncePrivate("alice", info, ts+1, nil, []identity.PublicKey{mallory.Public()}, true)
			for name, edit := range map[string]func(a *identity.Announcement){
				"public_sig from another announcement": func(a *identity.Announcement) { a.PublicSig = other.PublicSig },
				"readers changed":                      func(a *identity.Announcement) { a.Readers = other.Readers },
				"discoverable turned on":               func(a *identity.Announcement) { a.Discoverable = true },
				"private_sig from another announcement": func(a *identity.Announcement) {
					a.PrivateSig = other.PrivateSig
				},
				"private_sig missing": func(a *identity.Announcement) { a.PrivateSig = "" },
			} {
				t.Run(name, func(t *testing.T) {
					a := good
					edit(&a)
					got := (rawReq{method: "POST", path: "/announce", body: announceBody(t, a), signer: alice}).do(t, base)
					wantUnauthorized(t, name, got, "privacy extension")
				})
			}
			if raw, _ := rosterOf(t, base, alice); strings.Contains(raw, "/secret") {
				t.Fatalf("a refused announcement was stored: %s", raw)
			}
			if got := (rawReq{method: "POST", path: "/announce", body: announceBody(t, good), signer: alice}).do(t, base); got.code != http.StatusAccepted {
				t.Fatalf("the unchanged announcement: %d %s", got.code, got.body)
			}
		})
	}
}

// On a bus that does not require signatures (the default, optional, and
// off) every requester reads the same listing: the announcements as sent,
// member for member, extension and details included.
func TestAuthOptionalRosterIsTheSameForEveryone(t *testing.T) {
	for name, mode := range map[string]bus.Auth{"optional": bus.AuthOptional, "off": bus.AuthOff} {
		t.Run(name, func(t *testing.T) {
			base := bustest.Start(t, &bustest.Options{Auth: mode})
			p := announcePrivateRoster(t, base)
			unsigned, entries := rosterOf(t, base, nil)
			if len(entries) != 3 {
				t.Fatalf("unsigned roster: %s", unsigned)
			}
			var listed struct {
				Roster []map[string]any `json:"roster"`
			}
			if err := json.Unmarshal([]byte(unsigned), &listed); err != nil {
				t.Fatal(err)
			}
			for _, body := range p.bodies {
				var sent map[string]any
				if err := json.Unmarshal([]byte(body), &sent); err != nil {
					t.Fatal(err)
				}
				found := false
				for _, e := range listed.Roster {
					e = maps.Clone(e)
					delete(e, "age_ms")
					found = found || reflect.DeepEqual(e, sent)
				}
				if !found {
					t.Errorf("the roster does not hold the announcement as sent:\n%s\nroster:\n%s", body, unsigned)
				}
			}
			// Only the ages may differ between two listings.
			for _, s := range []*identity.Signer{p.bob, p.stranger, p.alice} {
				raw, _ := rosterOf(t, base, s)
				if digits.ReplaceAllString(raw, "N") != digits.ReplaceAllString(unsigned, "N") {
					t.Errorf("signed by %s:\n%s\nunsigned:\n%s", s.Public().Fingerprint(), raw, unsigned)
				}
			}
		})
	}
}
