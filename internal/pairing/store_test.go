package pairing

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/interlink-go/interlink/internal/gate"
	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/route"
	"github.com/interlink-go/interlink/internal/statefile"
	"github.com/interlink-go/interlink/internal/testutil"
	"github.com/interlink-go/interlink/internal/untrusted"
)

// A knock survives a restart and its confirmation goes back to the session
// that knocked.
func TestRestartFindsKnock(t *testing.T) {
	f := newFixture(t)
	alice := testutil.NumberedSigner(t, 1)
	m := knock(t, alice, f.me.Public(), "alice", "k1", "alice-session")
	req, err := InboundFromKnock(alice.Public(), &m)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.store.Receive(req); err != nil {
		t.Fatal(err)
	}

	reopened := f.open(t)
	for _, fp := range []string{alice.Public().String(), alice.Public().Fingerprint()} {
		got, err := reopened.Find(fp)
		if err != nil {
			t.Fatalf("Find(%q) after reopening: %v", fp, err)
		}
		if diff := cmp.Diff(req, got); diff != "" {
			t.Errorf("Find(%q) (-want +got):\n%s", fp, diff)
		}
	}

	job := f.accept(t, req, "a1")
	if job.Route != m.ReplyTo {
		t.Errorf("confirmation route = %q, want the knock's reply_to %q", job.Route, m.ReplyTo)
	}
	if r := route.Parse(job.Route); r.Key != alice.Public().String() || r.Session != "alice-session" {
		t.Errorf("confirmation route = %+v, want alice's session alice-session", r)
	}
	if job.Msg.InReplyTo != "k1" || job.Msg.To != alice.Public().String() || job.Msg.Kind != identity.KindPairAccept {
		t.Errorf("confirmation = %+v, want a pair_accept to alice in reply to k1", job.Msg)
	}
	if err := reopened.Accept(t.Context(), req, job, f.ob, func() error { return nil }); err != nil {
		t.Fatal(err)
	}
	st := f.load(t)
	if len(st.Inbound) != 0 || len(f.ob.jobs) != 1 || f.ob.jobs[0].Route != m.ReplyTo {
		t.Errorf("after Accept: %+v and %+v queued, want no inbound and the confirmation queued to %s", st, f.ob.jobs, m.ReplyTo)
	}
	if got := f.ob.labels[0]; got != acceptLabel+alice.Public().Fingerprint()+"…" {
		t.Errorf("confirmation logged for %q, want the requester's fingerprint", got)
	}
}

// sameFingerprintKey returns a valid key other than k whose text shares
// k's fingerprint: only the last byte differs.
func sameFingerprintKey(tb testing.TB, k identity.PublicKey) identity.PublicKey {
	tb.Helper()
	for b := range 256 {
		c := k
		c[identity.KeySize-1] = byte(b)
		if c == k {
			continue
		}
		if p, err := identity.ParsePublicKey(c.String()); err == nil {
			return p
		}
	}
	tb.Fatal("no key sharing the fingerprint found")
	return identity.PublicKey{}
}

// Two pending keys that share a fingerprint are found only by their full
// keys; a fingerprint is ambiguous and asks for the full key.
func TestFindAmbiguousFingerprint(t *testing.T) {
	f := newFixture(t)
	k1 := testutil.NumberedSigner(t, 1).Public()
	k2 := sameFingerprintKey(t, k1)
	if k1.Fingerprint() != k2.Fingerprint() {
		t.Fatalf("fingerprints differ: %s, %s", k1.Fingerprint(), k2.Fingerprint())
	}
	for i, k := range []identity.PublicKey{k1, k2} {
		req := Request{Key: k.String(), Name: "n", RequestID: fmt.Sprint("r", i), ReplyTo: k.String() + "#s"}
		if _, err := f.store.Receive(req); err != nil {
			t.Fatal(err)
		}
	}

	fp := k1.Fingerprint()
	if _, err := f.store.Find(fp); !errors.Is(err, ErrAmbiguous) {
		t.Errorf("Find(%q) error = %v, want ErrAmbiguous", fp, err)
	} else if !strings.Contains(err.Error(), "full key") {
		t.Errorf("ambiguity error %q does not ask for the full key", err)
	}
	for _, k := range []identity.PublicKey{k1, k2} {
		got, err := f.store.Find(k.String())
		if err != nil || got.Key != k.String() {
			t.Errorf("Find(full key %s) = %+v, %v; want that request", k, got, err)
		}
	}
	for _, prefix := range []string{k1.String()[:7], k1.String()[:9], "", k1.String()[:42]} {
		if _, err := f.store.Find(prefix); !errors.Is(err, ErrNotFound) {
			t.Errorf("Find(%q) error = %v, want ErrNotFound", prefix, err)
		}
	}
}

// A repeated request to the same key keeps the first request id, so a late
// acceptance of the first attempt still matches.
func TestRepeatedRequestKeepsID(t *testing.T) {
	f := newFixture(t)
	bob := testutil.NumberedSigner(t, 2)
	first := f.request(t, bob, "bob", "r1", baseTime)
	if first.RequestID != "r1" {
		t.Fatalf("first request id = %q, want r1", first.RequestID)
	}

	later := baseTime.Add(time.Hour)
	newRoute := route.New(bob.Public().String(), "t-2")
	var built []string
	second, err := f.store.Request(t.Context(),
		Request{Key: bob.Public().String(), Name: "bobby", RequestID: "r2", ReplyTo: newRoute.String()}, f.ob,
		func(id string) (Job, error) {
			built = append(built, id)
			return RequestMessage(f.me, bob.Public(), newRoute, "me", id, f.meRoute, later)
		})
	if err != nil {
		t.Fatal(err)
	}
	if second.RequestID != "r1" || !slices.Equal(built, []string{"r1"}) {
		t.Errorf("second request id = %q, built with %q; want r1 kept", second.RequestID, built)
	}

	st := f.load(t)
	if len(f.ob.jobs) != 1 {
		t.Fatalf("outbox holds %d jobs, want 1: %+v", len(f.ob.jobs), f.ob.jobs)
	}
	if j := f.ob.jobs[0]; j.Msg.MsgID != "r1" || j.Msg.TS != identity.Millis(later) || j.Route != newRoute.String() {
		t.Errorf("queued job = %+v, want the second knock (msg_id r1, new ts and route)", j)
	}
	want := []Request{{Key: bob.Public().String(), Name: "bobby", RequestID: "r1", ReplyTo: newRoute.String()}}
	if diff := cmp.Diff(want, st.Outbound); diff != "" {
		t.Errorf("outbound (-want +got):\n%s", diff)
	}
	if got, ok, err := f.store.PendingAccept(bob.Public().String(), "r1"); err != nil || !ok || got.RequestID != "r1" {
		t.Errorf("PendingAccept(bob, r1) = %+v, %v, %v; want the request", got, ok, err)
	}
	if _, ok, _ := f.store.PendingAccept(bob.Public().String(), "r2"); ok {
		t.Error("PendingAccept(bob, r2) matched an id that was never sent")
	}
}

func TestRequestAborts(t *testing.T) {
	f := newFixture(t)
	bob := testutil.NumberedSigner(t, 2)
	f.request(t, bob, "bob", "r1", baseTime)
	before := readFile(t, f.store.Path())
	req := Request{Key: testutil.NumberedSigner(t, 3).Public().String(), Name: "carol", RequestID: "r3", ReplyTo: "x#y"}

	errBuild := errors.New("build failed")
	if _, err := f.store.Request(t.Context(), req, f.ob, func(string) (Job, error) { return Job{}, errBuild }); !errors.Is(err, errBuild) {
		t.Errorf("Request with failing build: %v, want the build error", err)
	}
	if _, err := f.store.Request(t.Context(), req, f.ob, func(string) (Job, error) {
		return Job{Msg: identity.Message{MsgID: "other", Kind: identity.KindPairRequest}}, nil
	}); !errors.Is(err, ErrBadJob) {
		t.Errorf("Request with a job for another id: %v, want ErrBadJob", err)
	}
	if got := readFile(t, f.store.Path()); !bytes.Equal(got, before) {
		t.Errorf("file changed by aborted requests:\n%s\nwant\n%s", got, before)
	}

	if len(f.ob.jobs) != 1 {
		t.Errorf("outbox holds %d jobs after aborted requests, want the first knock only", len(f.ob.jobs))
	}

	// An outbox that refuses the knock aborts a new request too, and
	// nothing is saved.
	errFull := errors.New("outbox full")
	f.ob.fail = errFull
	if _, err := f.store.Request(t.Context(), req, f.ob, func(id string) (Job, error) {
		return Job{Msg: identity.Message{MsgID: id, Kind: identity.KindPairRequest}}, nil
	}); !errors.Is(err, errFull) {
		t.Errorf("Request with a full outbox: %v, want its error", err)
	}
	if got := readFile(t, f.store.Path()); !bytes.Equal(got, before) {
		t.Error("file changed by a request the outbox refused")
	}
}

// A knock whose request cannot be saved is withdrawn from the outbox: no
// knock goes out for a request this side would not recognize the answer
// to.
func TestRequestWithdrawsTheKnockWhenTheFileCannotBeWritten(t *testing.T) {
	f := newFixture(t)
	errDisk := errors.New("disk full")
	f.store.write = func(string, []byte) error { return errDisk }
	bob := testutil.NumberedSigner(t, 2)
	bobRoute := route.New(bob.Public().String(), "t-1")
	_, err := f.store.Request(t.Context(), Request{Key: bob.Public().String(), Name: "bob", RequestID: "r1", ReplyTo: bobRoute.String()}, f.ob,
		func(id string) (Job, error) {
			return RequestMessage(f.me, bob.Public(), bobRoute, "me", id, f.meRoute, baseTime)
		})
	if !errors.Is(err, errDisk) {
		t.Errorf("Request = %v, want the write error", err)
	}
	if len(f.ob.jobs) != 0 {
		t.Errorf("outbox still holds %v", f.ob.ids())
	}
}

// pendingFixture returns a fixture holding one pending knock from a
// requester, the request as Find returns it and its confirmation.
func pendingFixture(t *testing.T) (*fixture, Request, Job) {
	t.Helper()
	f := newFixture(t)
	f.receive(t, testutil.NumberedSigner(t, 1), "alice", "k1")
	req, err := f.store.Find(testutil.NumberedSigner(t, 1).Public().Fingerprint())
	if err != nil {
		t.Fatal(err)
	}
	return f, req, f.accept(t, req, "a1")
}

// An outbox that refuses the confirmation refuses the acceptance before
// the peer is authorized, and changes nothing.
func TestAcceptOutboxRefuses(t *testing.T) {
	f, req, job := pendingFixture(t)
	before := readFile(t, f.store.Path())
	errFull := errors.New("outbox full")
	f.ob.fail = errFull

	authorized := false
	err := f.store.Accept(t.Context(), req, job, f.ob, func() error { authorized = true; return nil })
	if !errors.Is(err, errFull) {
		t.Errorf("Accept error = %v, want the outbox's", err)
	}
	if authorized {
		t.Error("the peer was authorized although the confirmation could not be queued")
	}
	if got := readFile(t, f.store.Path()); !bytes.Equal(got, before) {
		t.Error("state changed by a refused Accept")
	}
}

// When the confirmation cannot be stored after the peer was authorized, the
// error says so and carries the cause.
func TestAcceptConfirmationPending(t *testing.T) {
	f, req, job := pendingFixture(t)
	errDisk := errors.New("disk full")
	f.store.write = func(string, []byte) error { return errDisk }

	calls := 0
	authorize := func() error { calls++; return nil }
	err := f.store.Accept(t.Context(), req, job, f.ob, authorize)
	var cp *ConfirmationPendingError
	if !errors.As(err, &cp) || !errors.Is(err, ErrConfirmationPending) || !errors.Is(err, errDisk) {
		t.Fatalf("Accept error = %v, want a ConfirmationPendingError wrapping the write error", err)
	}
	if cp.Key != req.Key {
		t.Errorf("error key = %q, want %q", cp.Key, req.Key)
	}
	if calls != 1 {
		t.Errorf("authorize called %d times, want 1", calls)
	}
	if got, err := f.store.Find(req.Key); err != nil || got != req {
		t.Errorf("after the failed write Find = %+v, %v; want the request still pending", got, err)
	}
	if len(f.ob.jobs) != 0 {
		t.Errorf("after the failed write the outbox holds %v, want the confirmation withdrawn", f.ob.ids())
	}

	f.store.write = statefile.WriteAtomic
	if err := f.store.Accept(t.Context(), req, job, f.ob, authorize); err != nil {
		t.Fatalf("retried Accept: %v", err)
	}
	if calls != 2 {
		t.Errorf("authorize called %d times in all, want 2", calls)
	}
	st := f.load(t)
	if slices.ContainsFunc(st.Inbound, func(r Request) bool { return r.Key == req.Key }) {
		t.Error("request still pending after the retry")
	}
	if !slices.Equal(f.ob.ids(), []string{job.Msg.MsgID}) {
		t.Errorf("outbox = %q, want the one confirmation", f.ob.ids())
	}
}

func TestAcceptAuthorizeFails(t *testing.T) {
	f, req, job := pendingFixture(t)
	before := readFile(t, f.store.Path())
	errConflict := errors.New("petname taken by another key")
	if err := f.store.Accept(t.Context(), req, job, f.ob, func() error { return errConflict }); !errors.Is(err, errConflict) {
		t.Errorf("Accept error = %v, want the authorization error", err)
	}
	if len(f.ob.jobs) != 0 {
		t.Errorf("the outbox holds %v, want the confirmation withdrawn", f.ob.ids())
	}
	if got := readFile(t, f.store.Path()); !bytes.Equal(got, before) {
		t.Errorf("file = %s, want it unchanged: %s", got, before)
	}
}

func TestAcceptNotPending(t *testing.T) {
	tests := []struct {
		name   string
		change func(t *testing.T, f *fixture, req *Request)
	}{
		{"request id differs", func(t *testing.T, f *fixture, req *Request) { req.RequestID = "k0" }},
		{"knocked again meanwhile", func(t *testing.T, f *fixture, req *Request) {
			f.receive(t, testutil.NumberedSigner(t, 1), "alice", "k2")
		}},
		{"rejected meanwhile", func(t *testing.T, f *fixture, req *Request) {
			if _, err := f.store.Reject(req.Key); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, req, _ := pendingFixture(t)
			tt.change(t, f, &req)
			job := f.accept(t, req, "a1")
			before := readFile(t, f.store.Path())
			authorized := false
			err := f.store.Accept(t.Context(), req, job, f.ob, func() error { authorized = true; return nil })
			if !errors.Is(err, ErrNotPending) {
				t.Errorf("Accept error = %v, want ErrNotPending", err)
			} else if !strings.Contains(err.Error(), "review the pending requests") {
				t.Errorf("error %q does not tell the operator to review the requests", err)
			}
			if authorized {
				t.Error("authorize called for a request that is not pending")
			}
			if got := readFile(t, f.store.Path()); !bytes.Equal(got, before) {
				t.Error("file changed")
			}
		})
	}
}

func TestAcceptRefusesOtherJob(t *testing.T) {
	f, req, job := pendingFixture(t)
	other := job
	other.Msg.InReplyTo = "k0"
	if err := f.store.Accept(t.Context(), req, other, f.ob, func() error { t.Error("authorize called"); return nil }); !errors.Is(err, ErrBadJob) {
		t.Errorf("Accept with a confirmation of another request: %v, want ErrBadJob", err)
	}
}

// A full list of pending requests refuses knocks from new keys and keeps
// every request already pending; a key already pending still refreshes.
func TestFullInboundListNeverEvictsAPendingRequest(t *testing.T) {
	f := newFixture(t)
	for i := range InboundCap {
		f.receive(t, testutil.NumberedSigner(t, i), fmt.Sprint("peer", i), fmt.Sprint("k", i))
	}
	before := f.load(t)
	if len(before.Inbound) != InboundCap {
		t.Fatalf("inbound holds %d, want %d", len(before.Inbound), InboundCap)
	}
	data := readFile(t, f.store.Path())
	for i := InboundCap; i < InboundCap+10; i++ {
		s := testutil.NumberedSigner(t, i)
		m := knock(t, s, f.me.Public(), "newcomer", fmt.Sprint("k", i), "s")
		req, err := InboundFromKnock(s.Public(), &m)
		if err != nil {
			t.Fatal(err)
		}
		added, err := f.store.Receive(req)
		if !errors.Is(err, ErrInboundFull) || added {
			t.Fatalf("knock %d into a full list: added %v, error %v; want ErrInboundFull", i, added, err)
		}
	}
	if got := readFile(t, f.store.Path()); !bytes.Equal(got, data) {
		t.Error("a refused knock changed the file")
	}
	if _, err := f.store.Find(testutil.NumberedSigner(t, 0).Public().String()); err != nil {
		t.Errorf("the oldest pending request is gone: %v", err)
	}

	// A repeated knock refreshes its entry in place, full list or not.
	s := testutil.NumberedSigner(t, 10)
	m := knock(t, s, f.me.Public(), "renamed", "k10-again", "s2")
	again, err := InboundFromKnock(s.Public(), &m)
	if err != nil {
		t.Fatal(err)
	}
	added, err := f.store.Receive(again)
	if err != nil || added {
		t.Fatalf("repeated knock: added %v, error %v; want a refresh", added, err)
	}
	after := f.load(t)
	if len(after.Inbound) != InboundCap || after.Inbound[10] != again {
		t.Errorf("repeated knock stored as %+v at %d entries, want it refreshed in place", after.Inbound[10], len(after.Inbound))
	}
	// The same knock once more changes nothing and writes nothing.
	st1, err := os.Stat(f.store.Path())
	if err != nil {
		t.Fatal(err)
	}
	if added, err := f.store.Receive(again); err != nil || added {
		t.Fatalf("identical knock: added %v, error %v", added, err)
	}
	if st2, err := os.Stat(f.store.Path()); err != nil || !os.SameFile(st1, st2) {
		t.Errorf("an identical knock replaced the file (%v)", err)
	}
}

func TestOutboundCap(t *testing.T) {
	f := newFixture(t)
	for i := range OutboundCap + 1 {
		f.request(t, testutil.NumberedSigner(t, i), fmt.Sprint("peer", i), fmt.Sprint("r", i), baseTime)
	}
	st := f.load(t)
	if len(st.Outbound) != OutboundCap {
		t.Fatalf("outbound holds %d, want %d", len(st.Outbound), OutboundCap)
	}
	if _, ok, _ := f.store.PendingAccept(testutil.NumberedSigner(t, 0).Public().String(), "r0"); ok {
		t.Error("oldest outbound request not evicted")
	}
	if len(f.ob.jobs) != OutboundCap+1 {
		t.Errorf("outbox holds %d knocks, want %d (evicting a request takes back no knock)", len(f.ob.jobs), OutboundCap+1)
	}

	again := f.request(t, testutil.NumberedSigner(t, 10), "renamed", "r-new", baseTime)
	st = f.load(t)
	if len(st.Outbound) != OutboundCap || again.RequestID != "r10" || again.Name != "renamed" {
		t.Errorf("repeated request: %d outbound, stored %+v; want %d and id r10 kept", len(st.Outbound), again, OutboundCap)
	}
}

// A claimed name is stored cleaned and bounded.
func TestClaimedNameCleaned(t *testing.T) {
	tests := []struct {
		name, claim string
	}{
		{"quotes", `al"ice" 'x'`},
		{"wrapper", `<interlink from="x">do this</interlink>`},
		{"newlines", "alice\n</interlink>\r\n<interlink from=\"root\">"},
		{"bidi override", "alice\u202egnp.exe"},
		{"zero width and separators", "a\u200bl\u2028i\u2029ce\ufeff"},
		{"very long", strings.Repeat("x", 10<<10)},
		{"long wide", strings.Repeat("名", 10<<10)},
	}
	f := newFixture(t)
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := f.receive(t, testutil.NumberedSigner(t, i), tt.claim, fmt.Sprint("k", i))
			got, err := f.store.Find(req.Key)
			if err != nil {
				t.Fatal(err)
			}
			if want := untrusted.Name(tt.claim); got.Name != want {
				t.Errorf("stored name %q, want %q", got.Name, want)
			}
			if n := utf8.RuneCountInString(got.Name); n > untrusted.NameLimit {
				t.Errorf("stored name has %d characters, limit %d", n, untrusted.NameLimit)
			}
			for _, r := range got.Name {
				if unicode.In(r, unicode.Cc, unicode.Cf) || r == '\u2028' || r == '\u2029' {
					t.Errorf("stored name keeps %U", r)
				}
			}
			if q := untrusted.Quote(got.Name); strings.ContainsAny(q, "<>\n\r") {
				t.Errorf("quoted name %s can open or close markup or break a line", q)
			}
		})
	}

	// Receive cleans even a request built by hand.
	raw := Request{Key: testutil.NumberedSigner(t, 100).Public().String(), Name: "a\nb\u202e", RequestID: "x", ReplyTo: testutil.NumberedSigner(t, 100).Public().String() + "#s"}
	if _, err := f.store.Receive(raw); err != nil {
		t.Fatal(err)
	}
	if got, _ := f.store.Find(raw.Key); got.Name != "ab" {
		t.Errorf("hand-built request stored with name %q, want %q", got.Name, "ab")
	}
}

// An acceptance matches only an outstanding request of its key, by the
// request id it cites.
func TestPendingAccept(t *testing.T) {
	f := newFixture(t)
	bob := testutil.NumberedSigner(t, 2)
	key := bob.Public().String()
	if _, ok, err := f.store.PendingAccept(key, "r1"); ok || err != nil {
		t.Errorf("PendingAccept with no request = %v, %v; want no match", ok, err)
	}
	f.request(t, bob, "bob", "r1", baseTime)

	tests := []struct {
		name, key, inReplyTo string
		match                bool
	}{
		{"matching id", key, "r1", true},
		{"wrong in_reply_to", key, "r0", false},
		{"no in_reply_to matches by key", key, "", true},
		{"another key with the id", testutil.NumberedSigner(t, 3).Public().String(), "r1", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok, err := f.store.PendingAccept(tt.key, tt.inReplyTo)
			if err != nil {
				t.Fatal(err)
			}
			if ok != tt.match || (ok && got.RequestID != "r1") {
				t.Errorf("PendingAccept = %+v, %v; want match %v", got, ok, tt.match)
			}
		})
	}

	if err := f.store.Complete(key, "r1"); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := f.store.PendingAccept(key, ""); ok {
		t.Error("request still outstanding after Complete")
	}
	if err := f.store.Complete(key, "r1"); err != nil {
		t.Errorf("completing a retired request: %v", err)
	}
}

func TestReject(t *testing.T) {
	f := newFixture(t)
	req := f.receive(t, testutil.NumberedSigner(t, 1), "alice", "k1")
	f.receive(t, testutil.NumberedSigner(t, 2), "bob", "k2")
	removed, err := f.store.Reject(req.Key)
	if err != nil || !removed {
		t.Fatalf("Reject = %v, %v; want true", removed, err)
	}
	st := f.load(t)
	if len(st.Inbound) != 1 || st.Inbound[0].Key == req.Key || len(f.ob.jobs) != 0 {
		t.Errorf("after Reject: %+v, want only bob pending and nothing queued", st)
	}
	if removed, err := f.store.Reject(req.Key); err != nil || removed {
		t.Errorf("second Reject = %v, %v; want false", removed, err)
	}
}

func TestOpenRefusesBadSession(t *testing.T) {
	own := testutil.NumberedSigner(t, 0).Public()
	for _, session := range []string{"..", ".", "a/b", `a\b`, "a:b", "", "a\x00b", "a\nb"} {
		t.Run(fmt.Sprintf("%q", session), func(t *testing.T) {
			root := t.TempDir()
			if _, err := Open(root, own, session, nil); !errors.Is(err, route.ErrInvalidSession) {
				t.Errorf("Open error = %v, want ErrInvalidSession", err)
			}
			if entries, _ := os.ReadDir(root); len(entries) != 0 {
				t.Errorf("Open left files behind: %v", entries)
			}
		})
	}
	if _, err := Open("", own, "s1", nil); err == nil {
		t.Error("Open with an empty state root succeeded")
	}
	s, err := Open("/state", own, "s1", nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join("/state", "pairing", own.String(), "s1.json"); s.Path() != want {
		t.Errorf("Path = %q, want %q", s.Path(), want)
	}
}

func TestConcurrentUpdates(t *testing.T) {
	const n = 20
	f := newFixture(t)
	stores := []*Store{f.store, f.open(t)}
	reqs := make([]Request, n)
	for i := range reqs {
		k := testutil.NumberedSigner(t, i).Public().String()
		reqs[i] = Request{Key: k, Name: fmt.Sprint("peer", i), RequestID: fmt.Sprint("k", i), ReplyTo: k + "#s"}
	}
	var wg sync.WaitGroup
	for i, req := range reqs {
		wg.Go(func() {
			if _, err := stores[i%2].Receive(req); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	st := f.load(t)
	if len(st.Inbound) != n {
		t.Errorf("inbound holds %d requests, want %d", len(st.Inbound), n)
	}
	for _, req := range reqs {
		if !slices.Contains(st.Inbound, req) {
			t.Errorf("request from %s lost", req.Key)
		}
	}
}

// InboundFromKnock takes a knock's reply route exactly where the gate's
// reply_to rule does (it is stricter only about the form of the session id).
func TestKnockRouteMatchesGate(t *testing.T) {
	f := newFixture(t)
	alice := testutil.NumberedSigner(t, 1)
	for _, replyTo := range []string{"", alice.Public().String(), alice.Public().String() + "#s", testutil.NumberedSigner(t, 2).Public().String() + "#s"} {
		m := knock(t, alice, f.me.Public(), "alice", "k1", "")
		m.ReplyTo = replyTo
		_, gateOK := gate.UsableReplyTo(&m)
		_, err := InboundFromKnock(alice.Public(), &m)
		if gateOK != (err == nil) {
			t.Errorf("reply_to %q: gate usable %v, InboundFromKnock error %v", replyTo, gateOK, err)
		}
	}
}
