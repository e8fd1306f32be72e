package bus_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/interlink-go/interlink/internal/bus"
	"github.com/interlink-go/interlink/internal/bus/bustest"
	"github.com/interlink-go/interlink/internal/identity"
)

// rosterAnswer reads target signed by signer (nil: unsigned), sending
// ifNoneMatch if it is not empty.
func rosterAnswer(t *testing.T, base, target string, signer *identity.Signer, ifNoneMatch string) rawAnswer {
	t.Helper()
	return (rawReq{method: "GET", path: target, signer: signer, tamper: func(r *http.Request) {
		if ifNoneMatch != "" {
			r.Header.Set("If-None-Match", ifNoneMatch)
		}
	}}).do(t, base)
}

// reannounceCarol posts a fresh announcement of carol's, who is not
// discoverable and whom bob alone reads.
func reannounceCarol(t *testing.T, base string, p privateRoster, summary string) {
	t.Helper()
	carol := p.carol.AnnouncePrivate("carol", identity.SessionInfo{SessionID: "c1", Cwd: "/home/carol/hidden", GitRoot: "carol-repo", Summary: summary},
		uint64(time.Now().UnixMilli()), nil, []identity.PublicKey{p.bob.Public()}, false)
	if got := (rawReq{method: "POST", path: "/announce", body: announceBody(t, carol), signer: p.carol}).do(t, base); got.code != http.StatusAccepted {
		t.Fatalf("announce: %d %s", got.code, got.body)
	}
}

func TestAuthRequiredRosterTagIsThatOfTheRequestersListing(t *testing.T) {
	base := bustest.Start(t, &bustest.Options{Auth: bus.AuthRequired})
	p := announcePrivateRoster(t, base)
	tags := map[string]string{}
	requesters := map[string]*identity.Signer{"unsigned": nil, "stranger": p.stranger, "bob": p.bob, "carol": p.carol}
	for name, s := range requesters {
		got := rosterAnswer(t, base, "/roster", s, "")
		tags[name] = got.header.Get("ETag")
		if got.code != http.StatusOK || tags[name] == "" || !strings.Contains(got.header.Get("Cache-Control"), "private") {
			t.Fatalf("%s: %d %v", name, got.code, got.header)
		}
	}
	if tags["stranger"] != tags["unsigned"] || tags["bob"] == tags["stranger"] {
		t.Errorf("tags %v: strangers see one listing, bob another", tags)
	}
	// Carol, whom strangers cannot see, announces again.
	reannounceCarol(t, base, p, "carol's new plans")
	for name, s := range requesters {
		got := rosterAnswer(t, base, "/roster", s, tags[name])
		hidden := name == "unsigned" || name == "stranger"
		switch {
		case hidden && (got.code != http.StatusNotModified || got.body != "" || got.header.Get("ETag") != tags[name]):
			t.Errorf("%s, from whom carol is hidden, got %d %q, ETag %q: the tag tells carol's announcements", name, got.code, got.body, got.header.Get("ETag"))
		case !hidden && (got.code != http.StatusOK || !strings.Contains(got.body, "carol's new plans")):
			t.Errorf("%s, who sees carol, got %d %s after her change", name, got.code, got.body)
		}
	}
}

func TestAuthRequiredLookupKeepsThePrivacyOfTheFullList(t *testing.T) {
	base := bustest.Start(t, &bustest.Options{Auth: bus.AuthRequired})
	p := announcePrivateRoster(t, base)
	keys := url.QueryEscape(p.alice.Public().String() + "," + p.carol.Public().String() + "," + p.dave.Public().String())
	for name, s := range map[string]*identity.Signer{"unsigned": nil, "stranger": p.stranger} {
		got := rosterAnswer(t, base, "/roster?keys="+keys, s, "")
		if got.code != http.StatusOK || !strings.Contains(got.body, `"alice"`) || strings.Contains(got.body, "carol") || strings.Contains(got.body, "dave") {
			t.Errorf("%s's lookup: %d %s; want alice's public entry alone", name, got.code, got.body)
		}
		for _, secret := range append(privateSecrets, "readers", "private_sig") {
			if strings.Contains(got.body, secret) || strings.Contains(got.body, strings.ReplaceAll(secret, "/", `\/`)) {
				t.Errorf("%s's lookup holds %q: %s", name, secret, got.body)
			}
		}
	}
	// Bob, a reader of alice and carol, gets their details by lookup: this
	// is how a peer's session reaches an agent on such a bus.
	got := rosterAnswer(t, base, "/roster?keys="+url.QueryEscape(p.carol.Public().String()), p.bob, "")
	if got.code != http.StatusOK || !strings.Contains(got.body, "carol plans") || strings.Contains(got.body, "alice") {
		t.Errorf("bob's lookup of carol: %d %s", got.code, got.body)
	}
	// Dave, who names no readers, finds himself and nobody finds him.
	if got := rosterAnswer(t, base, "/roster?keys="+url.QueryEscape(p.dave.Public().String()), p.dave, ""); !strings.Contains(got.body, "dave plans") {
		t.Errorf("dave's lookup of himself: %d %s", got.code, got.body)
	}
	if got := rosterAnswer(t, base, "/roster?keys="+url.QueryEscape(p.dave.Public().String()), p.bob, ""); got.body != `{"roster":[]}` {
		t.Errorf("bob's lookup of dave: %d %s", got.code, got.body)
	}
}
