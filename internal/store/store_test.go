package store

import (
	"fmt"
	"math"
	"testing"
)

func TestKey(t *testing.T) {
	for _, seq := range []uint64{0, 1, 42, 1_700_000_000_123_456_789, math.MaxUint64} {
		want := "K#s\x00" + fmt.Sprintf("%020d", seq)
		if got := Key("K#s", seq); got != want {
			t.Errorf("Key(K#s, %d) = %q, want %q", seq, got, want)
		}
		if len(Key("K#s", seq)) != len("K#s")+1+SeqDigits {
			t.Errorf("Key(K#s, %d) has the wrong length", seq)
		}
	}
}

func TestParseKey(t *testing.T) {
	for _, tc := range []struct {
		key   string
		route string
		seq   uint64
		ok    bool
	}{
		{Key("K#s", 42), "K#s", 42, true},
		{Key("", 0), "", 0, true},
		{Key("a\x00b", 7), "a\x00b", 7, true},
		{Key("K", math.MaxUint64), "K", math.MaxUint64, true},
		{"K\x0099999999999999999999", "", 0, false},
		{"K\x00-0000000000000000001", "", 0, false},
		{"K\x00+0000000000000000001", "", 0, false},
		{"K\x000000000000000000001", "", 0, false},
		{"K", "", 0, false},
		{"", "", 0, false},
	} {
		route, seq, ok := ParseKey(tc.key)
		if route != tc.route || seq != tc.seq || ok != tc.ok {
			t.Errorf("ParseKey(%q) = %q, %d, %v, want %q, %d, %v", tc.key, route, seq, ok, tc.route, tc.seq, tc.ok)
		}
	}
}

func TestHasRoute(t *testing.T) {
	for _, tc := range []struct {
		key, route string
		want       bool
	}{
		{Key("K#s", 1), "K#s", true},
		{Key("K#s2", 1), "K#s", false},
		{Key("K#s", 1), "K#s2", false},
		{Key("K", 1), "K#s", false},
		{Key("K#s", 1), "K", false},
		{Key("", 1), "", true},
		{Key("K#s", 1), "", false},
		{"K#s", "K#s", false},
	} {
		if got := HasRoute(tc.key, tc.route); got != tc.want {
			t.Errorf("HasRoute(%q, %q) = %v, want %v", tc.key, tc.route, got, tc.want)
		}
	}
}

// RouteBytes above TotalBytes is TotalBytes: one route cannot be promised
// more than the whole store.
func TestBoundsDefaults(t *testing.T) {
	for _, tc := range []struct {
		name               string
		opts               *Options
		wantRoute, wantAll int64
	}{
		{"nil", nil, DefaultRouteBytes, DefaultTotalBytes},
		{"zero", &Options{}, DefaultRouteBytes, DefaultTotalBytes},
		{"negative", &Options{RouteBytes: -1, TotalBytes: -1}, DefaultRouteBytes, DefaultTotalBytes},
		{"route above total", &Options{RouteBytes: 10 << 20, TotalBytes: 4 << 20}, 4 << 20, 4 << 20},
		{"total below the default route", &Options{TotalBytes: 1 << 20}, 1 << 20, 1 << 20},
		{"both set", &Options{RouteBytes: 1 << 20, TotalBytes: 1 << 30}, 1 << 20, 1 << 30},
	} {
		t.Run(tc.name, func(t *testing.T) {
			route, total := tc.opts.Bounds()
			if route != tc.wantRoute || total != tc.wantAll {
				t.Fatalf("Bounds() = %d, %d; want %d, %d", route, total, tc.wantRoute, tc.wantAll)
			}
		})
	}
}
