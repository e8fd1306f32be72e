package pairing

import (
	"errors"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/route"
	"github.com/interlink-go/interlink/internal/testutil"
)

// A knock without a usable reply route is discarded and nothing is stored.
func TestKnockWithoutReplyRoute(t *testing.T) {
	alice := testutil.NumberedSigner(t, 1)
	key := alice.Public().String()
	tests := []struct {
		name, replyTo string
	}{
		{"missing", ""},
		{"another key", testutil.NumberedSigner(t, 2).Public().String() + "#s1"},
		{"bare key", key},
		{"empty session", key + "#"},
		{"session that is a path element", key + "#.."},
		{"session with a control character", key + "#s\n1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			m := knock(t, alice, f.me.Public(), "alice", "k1", "")
			m.ReplyTo = tt.replyTo
			req, err := InboundFromKnock(alice.Public(), &m)
			if !errors.Is(err, ErrNoReplyRoute) {
				t.Fatalf("InboundFromKnock = %+v, %v; want ErrNoReplyRoute", req, err)
			}
			// The handler stores only what InboundFromKnock accepted.
			if _, err := os.Stat(f.store.Path()); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("state file exists after a discarded knock (stat: %v)", err)
			}
			if _, err := f.store.Find(key); !errors.Is(err, ErrNotFound) {
				t.Errorf("Find after a discarded knock: %v, want ErrNotFound", err)
			}
		})
	}
}

func TestInboundFromKnock(t *testing.T) {
	alice := testutil.NumberedSigner(t, 1)
	m := knock(t, alice, testutil.NumberedSigner(t, 9).Public(), "  alice\n", "k1", "a-1")
	got, err := InboundFromKnock(alice.Public(), &m)
	if err != nil {
		t.Fatal(err)
	}
	want := Request{Key: alice.Public().String(), Name: "alice", RequestID: "k1", ReplyTo: alice.Public().String() + "#a-1"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("request (-want +got):\n%s", diff)
	}

	noID := knock(t, alice, testutil.NumberedSigner(t, 9).Public(), "alice", "", "a-1")
	if req, err := InboundFromKnock(alice.Public(), &noID); err == nil {
		t.Errorf("knock with an empty msg_id gave %+v, want an error", req)
	}
}

// A job an earlier version queued is handed to the outbox only when this
// side would have queued it: the outbox signs old messages again with the
// own key, so a planted or damaged job must never reach it.
func TestCheckJob(t *testing.T) {
	me, bob := testutil.NumberedSigner(t, 0), testutil.NumberedSigner(t, 1)
	meRoute := route.New(me.Public().String(), "me-1")
	bobRoute := route.New(bob.Public().String(), "bob-1")
	knockJob, err := RequestMessage(me, bob.Public(), bobRoute, "me", "r1", meRoute, baseTime)
	if err != nil {
		t.Fatal(err)
	}
	acceptJob, err := AcceptMessage(me, Request{Key: bob.Public().String(), Name: "bob", RequestID: "k7", ReplyTo: bobRoute.String()},
		"me", meRoute, baseTime, "a1")
	if err != nil {
		t.Fatal(err)
	}
	for name, job := range map[string]Job{"knock": knockJob, "confirmation": acceptJob} {
		if err := checkJob(job, me.Public()); err != nil {
			t.Errorf("%s: %v, want it accepted", name, err)
		}
	}
	if acceptJob.Msg.InReplyTo != "k7" || acceptJob.Msg.ReplyTo != meRoute.String() {
		t.Fatalf("confirmation lacks in_reply_to or reply_to: %+v", acceptJob.Msg)
	}

	otherKey, err := RequestMessage(bob, me.Public(), meRoute, "bob", "r2", bobRoute, baseTime)
	if err != nil {
		t.Fatal(err)
	}
	plain := identity.Message{To: bob.Public().String(), Text: "hi", TS: identity.Millis(baseTime), MsgID: "m1", ReplyTo: meRoute.String()}
	if err := me.SignMessage(&plain); err != nil {
		t.Fatal(err)
	}
	tampered := knockJob
	tampered.Msg.Text = "someone else"
	bare := knockJob
	bare.Route = bob.Public().String()
	misrouted := knockJob
	misrouted.Route = meRoute.String()
	tests := []struct {
		name string
		job  Job
	}{
		{"signed by another key", otherKey},
		{"not a pairing kind", Job{Route: bobRoute.String(), Msg: plain}},
		{"tampered", tampered},
		{"unsigned", Job{Route: bobRoute.String(), Msg: identity.Message{Kind: identity.KindPairRequest}}},
		{"bare route", bare},
		{"route of another key", misrouted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := checkJob(tt.job, me.Public()); !errors.Is(err, ErrBadJob) {
				t.Errorf("checkJob = %v; want ErrBadJob", err)
			}
		})
	}
}

func TestRequestMessage(t *testing.T) {
	me, bob := testutil.NumberedSigner(t, 0), testutil.NumberedSigner(t, 1)
	meRoute := route.New(me.Public().String(), "me-1")
	bobRoute := route.New(bob.Public().String(), "bob-1")
	job, err := RequestMessage(me, bob.Public(), bobRoute, "my name", "r1", meRoute, baseTime)
	if err != nil {
		t.Fatal(err)
	}
	want := identity.Message{
		From: me.Public().String(), To: bob.Public().String(), Text: "my name",
		TS: identity.Millis(baseTime), MsgID: "r1", Kind: identity.KindPairRequest,
		ReplyTo: meRoute.String(), Sig: job.Msg.Sig,
	}
	if diff := cmp.Diff(want, job.Msg); diff != "" {
		t.Errorf("knock (-want +got):\n%s", diff)
	}
	if job.Route != bobRoute.String() {
		t.Errorf("route = %q, want %q", job.Route, bobRoute)
	}
	if _, err := job.Msg.Verify(); err != nil {
		t.Errorf("knock does not verify: %v", err)
	}

	tests := []struct {
		name         string
		target, own  route.Route
		requestID    string
		wantBadRoute bool
	}{
		{"bare target", route.New(bob.Public().String(), ""), meRoute, "r1", true},
		{"target route of another key", route.New(me.Public().String(), "x"), meRoute, "r1", true},
		{"bare own route", bobRoute, route.New(me.Public().String(), ""), "r1", true},
		{"own route of another key", bobRoute, route.New(bob.Public().String(), "x"), "r1", true},
		{"empty request id", bobRoute, meRoute, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := RequestMessage(me, bob.Public(), tt.target, "me", tt.requestID, tt.own, baseTime)
			if err == nil || errors.Is(err, ErrBadRoute) != tt.wantBadRoute {
				t.Errorf("RequestMessage error = %v, want ErrBadRoute %v", err, tt.wantBadRoute)
			}
		})
	}
}

func TestAcceptMessageRefuses(t *testing.T) {
	me, alice := testutil.NumberedSigner(t, 0), testutil.NumberedSigner(t, 1)
	meRoute := route.New(me.Public().String(), "me-1")
	key := alice.Public().String()
	good := Request{Key: key, Name: "alice", RequestID: "k1", ReplyTo: key + "#a-1"}
	tests := []struct {
		name         string
		edit         func(*Request)
		own          route.Route
		msgID        string
		wantBadRoute bool
	}{
		{"bare reply route", func(r *Request) { r.ReplyTo = key }, meRoute, "a1", true},
		{"reply route of another key", func(r *Request) { r.ReplyTo = me.Public().String() + "#x" }, meRoute, "a1", true},
		{"bare own route", func(*Request) {}, route.New(me.Public().String(), ""), "a1", true},
		{"empty request id", func(r *Request) { r.RequestID = "" }, meRoute, "a1", false},
		{"empty msg_id", func(*Request) {}, meRoute, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := good
			tt.edit(&req)
			_, err := AcceptMessage(me, req, "me", tt.own, baseTime, tt.msgID)
			if err == nil || errors.Is(err, ErrBadRoute) != tt.wantBadRoute {
				t.Errorf("AcceptMessage error = %v, want ErrBadRoute %v", err, tt.wantBadRoute)
			}
		})
	}
}
