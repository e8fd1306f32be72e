package inbound_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/interlink-go/interlink/internal/inbound"
	"github.com/interlink-go/interlink/internal/pairing"
	"github.com/interlink-go/interlink/internal/protocol"
	"github.com/interlink-go/interlink/internal/testutil"
)

// notices returns the notices of kind.
func (f *fixture) noticesOf(kind string) []inbound.Notice {
	var out []inbound.Notice
	for _, n := range f.gotNotices() {
		if n.Kind == kind {
			out = append(out, n)
		}
	}
	return out
}

func (f *fixture) inbound(tb testing.TB) []pairing.Request {
	tb.Helper()
	st, err := f.pair.Load()
	if err != nil {
		tb.Fatal(err)
	}
	return st.Inbound
}

// One key knocking a thousand times in ten seconds leaves one pending
// request and one notice; the repeats are dropped silently, so no notice of
// dropped knocks follows either.
func TestRepeatedKnocksFromOneKeyMakeOneRequestAndOneNotice(t *testing.T) {
	f := newFixture(t)
	l := f.loop(noRelay)
	for i := range 1000 {
		handle(t, l, payload(t, f.knock(t, f.eve, fmt.Sprint("eve ", i), nil)), true)
		f.clk.Advance(10 * time.Millisecond)
	}
	f.clk.Advance(time.Hour)
	handle(t, l, payload(t, f.knock(t, f.eve, "eve again", nil)), true)

	in := f.inbound(t)
	if len(in) != 1 || in[0].Key != f.eve.Public().String() {
		t.Fatalf("pending requests = %+v, want eve's only", in)
	}
	if in[0].Name != "eve again" {
		t.Errorf("pending request names %q; a knock after the quiet hour should refresh it", in[0].Name)
	}
	if n := f.gotNotices(); len(n) != 1 || n[0].Kind != inbound.KindKnock {
		t.Errorf("notices = %+v, want one knock notice", n)
	}
	f.wantLog(t, "reason=key_rate_limited", "pairing request refreshed")
}

// A flood of knocks from fresh keys never evicts the request pending
// before it. What is turned away, because the list is full or because too
// many arrive at once, is reported in one notice with the count, and not
// again for a while however long the flood goes on.
func TestKnockFloodFromManyKeysKeepsThePendingRequest(t *testing.T) {
	f := newFixture(t)
	l := f.loop(noRelay)
	handle(t, l, payload(t, f.knock(t, f.eve, "eve", nil)), true)
	const flood = 200
	for i := range flood {
		s := testutil.NumberedSigner(t, 100+i)
		handle(t, l, payload(t, f.knock(t, s, fmt.Sprint("stranger ", i), nil)), true)
		f.clk.Advance(time.Millisecond)
	}
	in := f.inbound(t)
	if len(in) != pairing.InboundCap || in[0].Key != f.eve.Public().String() {
		t.Fatalf("%d pending requests, first %s; want %d with eve's first", len(in), in[0].Key, pairing.InboundCap)
	}
	if n := len(f.noticesOf(inbound.KindKnock)); n != pairing.InboundCap {
		t.Errorf("%d knock notices, want one per recorded request (%d)", n, pairing.InboundCap)
	}
	if n := f.noticesOf(inbound.KindKnocksDropped); len(n) != 0 {
		t.Fatalf("a notice of dropped knocks before the burst could settle: %+v", n)
	}

	// The next drop after the delay brings the count out.
	f.clk.Advance(inbound.DroppedNoticeDelay)
	handle(t, l, payload(t, f.knock(t, testutil.NumberedSigner(t, 99), "late", nil)), true)
	dropped := f.noticesOf(inbound.KindKnocksDropped)
	if len(dropped) != 1 {
		t.Fatalf("notices of dropped knocks = %+v, want one", dropped)
	}
	wantDropped := flood + 1 - (pairing.InboundCap - 1)
	if d := dropped[0]; d.Sender != protocol.SystemSender || !strings.HasPrefix(d.Text, fmt.Sprintf("%d pairing requests", wantDropped)) ||
		!strings.Contains(d.Text, "list of pending pairing requests is full") || !strings.Contains(d.Text, "too many arrived at once") {
		t.Errorf("dropped notice from %q: %s\nwant the count %d and both reasons", d.Sender, d.Text, wantDropped)
	}

	// More drops within DroppedNoticeEvery add no notice; after it, one.
	for i := range 14 {
		f.clk.Advance(time.Minute)
		handle(t, l, payload(t, f.knock(t, testutil.NumberedSigner(t, 400+i), "more", nil)), true)
	}
	if n := len(f.noticesOf(inbound.KindKnocksDropped)); n != 1 {
		t.Errorf("%d notices of dropped knocks after 14 more minutes of flood, want still 1", n)
	}
	f.clk.Advance(inbound.DroppedNoticeEvery - 14*time.Minute)
	handle(t, l, payload(t, f.knock(t, testutil.NumberedSigner(t, 500), "more", nil)), true)
	dropped = f.noticesOf(inbound.KindKnocksDropped)
	if len(dropped) != 2 || !strings.HasPrefix(dropped[1].Text, "15 pairing requests") {
		t.Errorf("notices of dropped knocks = %+v, want a second one counting the 15 since the first", dropped)
	}
	if in := f.inbound(t); in[0].Key != f.eve.Public().String() {
		t.Errorf("eve's request was evicted")
	}
}

// The limit across keys holds while every key stays under its own limit,
// and refills with time.
func TestKnockRateAcrossKeysRefills(t *testing.T) {
	f := newFixture(t)
	l := f.loop(noRelay)
	for i := range inbound.KnockBurst + 10 {
		handle(t, l, payload(t, f.knock(t, testutil.NumberedSigner(t, 100+i), "s", nil)), true)
	}
	// The list filled at InboundCap; the rest of the burst was refused
	// for that, the last ten for the rate.
	f.wantLog(t, "reason=pending_list_full", "reason=rate_limited")
	if ok, err := f.pair.Reject(testutil.NumberedSigner(t, 100).Public().String()); err != nil || !ok {
		t.Fatalf("Reject = %v, %v", ok, err)
	}
	newcomer := testutil.NumberedSigner(t, 999)
	handle(t, l, payload(t, f.knock(t, newcomer, "newcomer", nil)), true)
	if _, err := f.pair.Find(newcomer.Public().String()); err == nil {
		t.Fatal("a knock over the rate was recorded")
	}
	f.clk.Advance(inbound.KnockEvery)
	handle(t, l, payload(t, f.knock(t, newcomer, "newcomer", nil)), true)
	if _, err := f.pair.Find(newcomer.Public().String()); err != nil {
		t.Errorf("a knock after the refill was not recorded: %v", err)
	}
}
