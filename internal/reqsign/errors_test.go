package reqsign

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/interlink-go/interlink/internal/identity"
)

// TestErrorsGiveTheirReasonWithoutThePrefix: every error type of the
// package names its sentinel for errors.Is, and gives its message without
// the "reqsign: " prefix, for a relay or a command that explains the
// problem in its own words.
func TestErrorsGiveTheirReasonWithoutThePrefix(t *testing.T) {
	alice := testSigner(t, 1)
	const url = "http://relay.example/recv?me=x"
	verify := func(at time.Time, drop string) error {
		r := signed(t, alice, "GET", url, "", at)
		if drop != "" {
			r.Header.Del(drop)
		}
		_, err := newVerifier(t, nil).Verify(r, nil, t0)
		return err
	}
	type reasoned interface {
		error
		Reason() string
	}
	_, optErr := New(&Options{PathPrefixes: []string{"bus"}})
	for name, c := range map[string]struct {
		err      error
		sentinel error
		reason   string
	}{
		"missing header": {verify(t0, HeaderNonce), ErrMissing, "header Interlink-Nonce is missing"},
		"stale": {verify(t0.Add(-MaxPast-time.Millisecond), ""), ErrStale,
			fmt.Sprintf("request signed too long ago: %d ms behind the relay's clock, at most %d", MaxPast.Milliseconds()+1, MaxPast.Milliseconds())},
		"future": {verify(t0.Add(MaxFuture+2*time.Millisecond), ""), ErrFuture,
			fmt.Sprintf("request signed in the future: %d ms ahead of the relay's clock, at most %d", MaxFuture.Milliseconds()+2, MaxFuture.Milliseconds())},
		"path prefix": {optErr, nil, `path prefix "bus" must start with / and not end with it`},
	} {
		re, ok := c.err.(reasoned)
		if !ok {
			t.Errorf("%s: err = %#v (%v), want an error with a reason", name, c.err, c.err)
			continue
		}
		if re.Reason() != c.reason || re.Error() != "reqsign: "+c.reason {
			t.Errorf("%s: reason %q, message %q; want %q after the prefix", name, re.Reason(), re.Error(), c.reason)
		}
		if c.sentinel != nil && !errors.Is(c.err, c.sentinel) {
			t.Errorf("%s: %v is not %v", name, c.err, c.sentinel)
		}
	}
	if _, ok := errors.AsType[*TimeError](verify(t0.Add(time.Hour), "")); !ok {
		t.Error("a stale request's error is not a *TimeError")
	}
	if _, ok := errors.AsType[*OptionsError](optErr); !ok {
		t.Error("refused options are not an *OptionsError")
	}
}

// TestStaleBehindTheNonceMemoryIsATimeError: a request fresh by the
// caller's clock but older than what the nonce memory has moved on to is
// stale too, with its own reason.
func TestStaleBehindTheNonceMemoryIsATimeError(t *testing.T) {
	s := newNonceSet(10, 100)
	var key identity.PublicKey
	if err := s.insert(key, [NonceSize]byte{1}, 2000); err != nil {
		t.Fatal(err)
	}
	s.high = 3000
	err := s.insert(key, [NonceSize]byte{2}, 1000)
	te, ok := errors.AsType[*TimeError](err)
	if !ok || !errors.Is(err, ErrStale) || te.Reason() != "request signed too long ago: behind the latest time the relay saw" {
		t.Fatalf("err = %#v (%v)", err, err)
	}
}
