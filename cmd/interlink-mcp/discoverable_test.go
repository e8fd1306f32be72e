package main

import (
	"bytes"
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/interlink-go/interlink/internal/bus"
	"github.com/interlink-go/interlink/internal/bus/bustest"
	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/relay"
)

// listed reports whether the roster of url, read signed by signer (nil:
// unsigned), lists key#session.
func listed(url string, signer *identity.Signer, key, session string) bool {
	var opts relay.Options
	if signer != nil {
		opts.Signer = signer
	}
	ros := relay.FetchRoster(context.Background(), []*relay.Client{relay.New(url, &opts)})
	for _, e := range ros.Entries {
		if e.Key.String() == key && e.Session.SessionID == session {
			return true
		}
	}
	return false
}

// On a bus that requires signatures, a server started with
// INTERLINK_DISCOVERABLE=no or --discoverable no is on the roster for its
// own key and hidden from an unsigned request and a stranger's; one
// started without the setting is discoverable.
func TestDiscoverableSettingHidesTheSessionFromStrangers(t *testing.T) {
	url := bustest.Start(t, &bustest.Options{Auth: bus.AuthRequired})
	stranger := newAgentFiles(t)
	for _, tc := range []struct {
		session string
		env     []string
		args    []string
		visible bool
	}{
		{"env-no", []string{"INTERLINK_DISCOVERABLE=no"}, nil, false},
		{"flag-no", []string{"INTERLINK_DISCOVERABLE=yes"}, []string{"--discoverable", "no"}, false},
		{"default", nil, nil, true},
	} {
		t.Run(tc.session, func(t *testing.T) {
			f := newAgentFiles(t)
			p := launchMCP(t, f.env(url, append([]string{"INTERLINK_SESSION=" + tc.session, "INTERLINK_LOG_LEVEL=warn"}, tc.env...)...), tc.args...)
			p.initialize()
			waitFor(t, tc.session+" on the roster of its own key", func() bool {
				return listed(url, f.signer, f.pubkey(), tc.session)
			})
			for name, signer := range map[string]*identity.Signer{"unsigned": nil, "a stranger's": stranger.signer} {
				if got := listed(url, signer, f.pubkey(), tc.session); got != tc.visible {
					t.Errorf("%s roster lists %s: %v, want %v", name, tc.session, got, tc.visible)
				}
			}
			if code := p.closeAndWait(); code != 0 {
				t.Errorf("exit status %d", code)
			}
		})
	}
}

// A value other than yes or no is a usage error that names its source.
func TestDiscoverableSettingRefusesOtherValues(t *testing.T) {
	f := newAgentFiles(t)
	for _, tc := range []struct {
		args []string
		env  string
		want string
	}{
		{[]string{"--discoverable", "maybe"}, "", `--discoverable "maybe": want yes or no`},
		{nil, "sometimes", `INTERLINK_DISCOVERABLE "sometimes": want yes or no`},
	} {
		var out, errOut bytes.Buffer
		env := map[string]string{"INTERLINK_KEY": f.key, "INTERLINK_PEERS": f.peers,
			"INTERLINK_STATE_DIR": filepath.Join(f.dir, "state"), "INTERLINK_DISCOVERABLE": tc.env}
		c := &cli{stdout: &out, stderr: &errOut, getenv: func(k string) string { return env[k] }}
		if code := c.run(t.Context(), tc.args, strings.NewReader("")); code != exitUsage || !strings.Contains(errOut.String(), tc.want) {
			t.Errorf("%v %q: status %d, stderr %q; want %d and %q", tc.args, tc.env, code, errOut.String(), exitUsage, tc.want)
		}
	}
}

// capsOf returns the signed capabilities of session's announcement on
// the bus at url, as its own key reads them.
func capsOf(url string, signer *identity.Signer, session string) (caps []string, found bool) {
	ros := relay.FetchRoster(context.Background(), []*relay.Client{relay.New(url, &relay.Options{Signer: signer})})
	for _, e := range ros.Entries {
		if e.Key == signer.Public() && e.Session.SessionID == session {
			return e.Caps, e.CapsSigned
		}
	}
	return nil, false
}

// A server started with INTERLINK_RECEIPTS=no or --receipts no announces
// no receipts capability, so no peer sends it receipts or expects them;
// one started without the setting announces it beside sealing.
func TestReceiptsSettingDecidesTheAnnouncedCapability(t *testing.T) {
	url := bustest.Start(t, nil)
	for _, tc := range []struct {
		session string
		env     []string
		args    []string
		want    bool
	}{
		{"env-no", []string{"INTERLINK_RECEIPTS=no"}, nil, false},
		{"flag-no", []string{"INTERLINK_RECEIPTS=yes"}, []string{"--receipts", "no"}, false},
		{"default", nil, nil, true},
	} {
		t.Run(tc.session, func(t *testing.T) {
			f := newAgentFiles(t)
			p := launchMCP(t, f.env(url, append([]string{"INTERLINK_SESSION=" + tc.session, "INTERLINK_LOG_LEVEL=warn"}, tc.env...)...), tc.args...)
			p.initialize()
			var caps []string
			waitFor(t, tc.session+" on the roster with signed capabilities", func() bool {
				var ok bool
				caps, ok = capsOf(url, f.signer, tc.session)
				return ok
			})
			if !slices.Contains(caps, identity.CapSealed) {
				t.Errorf("capabilities %q lack %q", caps, identity.CapSealed)
			}
			if got := slices.Contains(caps, identity.CapReceipts); got != tc.want {
				t.Errorf("capabilities %q: receipts %v, want %v", caps, got, tc.want)
			}
			if code := p.closeAndWait(); code != 0 {
				t.Errorf("exit status %d", code)
			}
		})
	}
	var out, errOut bytes.Buffer
	f := newAgentFiles(t)
	env := map[string]string{"INTERLINK_KEY": f.key, "INTERLINK_PEERS": f.peers,
		"INTERLINK_STATE_DIR": filepath.Join(f.dir, "state"), "INTERLINK_RECEIPTS": "later"}
	c := &cli{stdout: &out, stderr: &errOut, getenv: func(k string) string { return env[k] }}
	if code := c.run(t.Context(), nil, strings.NewReader("")); code != exitUsage || !strings.Contains(errOut.String(), `INTERLINK_RECEIPTS "later": want yes or no`) {
		t.Errorf("status %d, stderr %q; want a usage error naming INTERLINK_RECEIPTS", code, errOut.String())
	}
}
