package bus

import (
	"encoding/json"
	"errors"
	"net/http/httptest"
	"regexp"
	"testing"
	"time"

	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/reqsign"
	"github.com/interlink-go/interlink/internal/testutil"
	"github.com/interlink-go/interlink/internal/wire"
)

// refusal returns the reason and text of err, which must be an
// *authError.
func refusal(t *testing.T, err error) (int, string) {
	t.Helper()
	ae, ok := errors.AsType[*authError](err)
	if !ok {
		t.Fatalf("err = %v, want a refusal for the signature", err)
	}
	return ae.reason, ae.msg
}

// TestSignatureRefusalsSayWhatIsWrongInTheRelaysWords: a refused signature
// is explained in the relay's own words, without the prefix of the package
// that found the problem, exactly as agents and operators have read it.
func TestSignatureRefusalsSayWhatIsWrongInTheRelaysWords(t *testing.T) {
	g := newGuard(&Options{Auth: AuthRequired}, time.Now)
	signer := testutil.Signer(t, 7)
	req := func(at time.Time, drop string) (reason int, msg string) {
		t.Helper()
		r := httptest.NewRequest("GET", "http://relay.example/recv?me=x", nil)
		if err := reqsign.Sign(r, nil, signer, at); err != nil {
			t.Fatal(err)
		}
		if drop != "" {
			r.Header.Del(drop)
		}
		_, err := g.verify(r, nil)
		return refusal(t, err)
	}

	if reason, msg := req(time.Now(), reqsign.HeaderNonce); reason != reasonMalformed || msg != "header Interlink-Nonce is missing" {
		t.Errorf("a missing nonce: reason %d, %q", reason, msg)
	}
	stale := regexp.MustCompile(`^request signed too long ago: [0-9]+ ms behind the relay's clock, at most 300000; check the clock of the machine that signed it$`)
	if reason, msg := req(time.Now().Add(-time.Hour), ""); reason != reasonStale || !stale.MatchString(msg) {
		t.Errorf("a stale signature: reason %d, %q", reason, msg)
	}
	future := regexp.MustCompile(`^request signed in the future: [0-9]+ ms ahead of the relay's clock, at most 60000; check the clock of the machine that signed it$`)
	if reason, msg := req(time.Now().Add(time.Hour), ""); reason != reasonStale || !future.MatchString(msg) {
		t.Errorf("a signature from the future: reason %d, %q", reason, msg)
	}
}

// TestBrokenPrivacyExtensionsAreExplainedWithoutThePackagePrefix: a
// signed announcement whose privacy extension does not hold is refused
// with what is wrong with the extension, after the relay's own words.
func TestBrokenPrivacyExtensionsAreExplainedWithoutThePackagePrefix(t *testing.T) {
	g := newGuard(&Options{Auth: AuthRequired}, time.Now)
	signer := testutil.Signer(t, 8)
	ann := signer.AnnouncePrivate("n", identity.SessionInfo{SessionID: "s"}, uint64(time.Now().Unix()), nil, nil, true)
	const prefix = "the announcement's privacy extension (readers, discoverable, public_sig, private_sig) is incomplete or does not verify: "
	for name, c := range map[string]struct {
		change func(map[string]any)
		want   string
	}{
		"no private_sig":        {func(m map[string]any) { delete(m, "private_sig") }, "private_sig: identity: undecodable payload: missing private_sig"},
		"readers a string":      {func(m map[string]any) { m["readers"] = "x" }, "readers is not a list of strings"},
		"discoverable a number": {func(m map[string]any) { m["discoverable"] = 1 }, "discoverable is not true or false"},
	} {
		t.Run(name, func(t *testing.T) {
			raw, err := identity.Marshal(ann)
			if err != nil {
				t.Fatal(err)
			}
			var m map[string]any
			if err := json.Unmarshal(raw, &m); err != nil {
				t.Fatal(err)
			}
			c.change(m)
			body, err := identity.Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			a, err := wire.DecodeAnnounce(body)
			if err != nil {
				t.Fatal(err)
			}
			reason, msg := refusal(t, g.announcer(signer.Public(), a, body))
			if reason != reasonAnnouncement || msg != prefix+c.want {
				t.Errorf("reason %d, %q; want %q", reason, msg, prefix+c.want)
			}
		})
	}
}
