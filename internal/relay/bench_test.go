package relay

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/interlink-go/interlink/internal/bus"
	"github.com/interlink-go/interlink/internal/bus/bustest"
	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/keylimit"
	"github.com/interlink-go/interlink/internal/reqsign"
	"github.com/interlink-go/interlink/internal/testutil"
	"github.com/interlink-go/interlink/internal/tlsfiles/tlstest"
)

// BenchmarkRoundTrip measures one message's round trip through a real
// bus on loopback, as an agent's client makes it: send, poll, ack, each
// a request on a kept connection. The variants run in one process and
// one run, so each figure stands beside the plain one: plain is HTTP and
// unsigned on a bus with --auth off (the floor), unsigned the same on the
// default bus, signed with every request signed and verified on a bus
// with --auth required, tls over HTTPS, and tls+signed both.
func BenchmarkRoundTrip(b *testing.B) {
	ca := tlstest.NewAuthority(b, "bench authority")
	a, peer := testutil.Signer(b, 1), testutil.Signer(b, 2)
	m := identity.Message{From: peer.Public().String(), To: a.Public().String(), Text: strings.Repeat("x", 200),
		TS: uint64(time.Now().UnixMilli()), MsgID: strings.Repeat("ef", 16), Kind: identity.KindMessage}
	if err := peer.SignMessage(&m); err != nil {
		b.Fatal(err)
	}
	payload, err := identity.Marshal(m)
	if err != nil {
		b.Fatal(err)
	}
	// Limits far above the rate of the loop: the figures are of
	// signing and verifying, not of waiting for tokens.
	fast := keylimit.Rate{Every: time.Nanosecond, Burst: 1 << 30}
	limits := &bus.Limits{Sends: fast, RosterUpdates: fast, Unsigned: fast}
	variants := []struct {
		name   string
		auth   bus.Auth
		tls    bool
		signed bool
	}{
		{"plain", bus.AuthOff, false, false},
		{"unsigned", bus.AuthOptional, false, false},
		{"signed", bus.AuthRequired, false, true},
		{"tls", bus.AuthOff, true, false},
		{"tls+signed", bus.AuthRequired, true, true},
	}
	for _, v := range variants {
		b.Run(v.name, func(b *testing.B) {
			// A nonce memory as large as the loop needs: by default a
			// key makes at most 4,096 signed requests in five minutes.
			verifier, err := reqsign.New(&reqsign.Options{PerKey: 1 << 22, Total: 1 << 23})
			if err != nil {
				b.Fatal(err)
			}
			o := &bustest.Options{Auth: v.auth, Limits: limits, Verifier: verifier}
			var hc *http.Client
			if v.tls {
				o.TLS = ca.ServerConfig(b, "127.0.0.1")
				hc = &http.Client{Transport: &http.Transport{TLSClientConfig: ca.ClientConfig(), MaxIdleConnsPerHost: 4}}
			}
			base := bustest.Start(b, o)
			var recvSigner, sendSigner *identity.Signer
			if v.signed {
				recvSigner, sendSigner = a, peer
			}
			recvOpts, sendOpts := &Options{HTTPClient: hc}, &Options{HTTPClient: hc}
			if recvSigner != nil {
				recvOpts.Signer, sendOpts.Signer = recvSigner, sendSigner
			}
			rc, sc := New(base, recvOpts), New(base, sendOpts)
			to := a.Public().String() + "#bench"
			ctx := context.Background()
			b.ResetTimer()
			for b.Loop() {
				if err := sc.Send(ctx, to, payload); err != nil {
					b.Fatal(err)
				}
				d, err := rc.Recv(ctx, to, 0)
				if err != nil || !d.HasMessage {
					b.Fatalf("recv: %+v %v", d, err)
				}
				if err := rc.Ack(ctx, to, d.Ack); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "trips/s")
		})
	}
}

// BenchmarkFetchRosterScale reads a real bus's roster of 10,000 signed
// sessions, as discover does: fresh is a client with nothing kept, which
// reads the whole list and decodes and verifies every entry; revalidated
// is a client that read it before, which the bus answers 304 and which
// hands back the entries it checked then.
func BenchmarkFetchRosterScale(b *testing.B) {
	const sessions = 10_000
	fast := keylimit.Rate{Every: time.Nanosecond, Burst: 1 << 30}
	base := bustest.Start(b, &bustest.Options{Limits: &bus.Limits{Sends: fast, RosterUpdates: fast, Unsigned: fast}})
	announcer := New(base, nil)
	for i := range sessions {
		s := testutil.NumberedSigner(b, i)
		info := identity.SessionInfo{SessionID: fmt.Sprintf("0b7d1f3e-2c4a-4f5e-9d6b-%012d", i), Cwd: "/home/dev/src/project",
			GitRoot: "/home/dev/src/project", Summary: "working on the parser"}
		if err := announcer.Announce(b.Context(), s.AnnounceCaps(fmt.Sprint("node", i), info, identity.Millis(time.Now()), []string{identity.CapSealed})); err != nil {
			b.Fatal(err)
		}
	}
	fetch := func(b *testing.B, c *Client) {
		r := FetchRoster(b.Context(), []*Client{c})
		if len(r.Entries) != sessions {
			b.Fatalf("%d entries, failures %v", len(r.Entries), r.Failures)
		}
	}
	b.Run("fresh", func(b *testing.B) {
		for b.Loop() {
			fetch(b, New(base, nil))
		}
	})
	b.Run("revalidated", func(b *testing.B) {
		c := New(base, nil)
		fetch(b, c)
		for b.Loop() {
			fetch(b, c)
		}
	})
}
