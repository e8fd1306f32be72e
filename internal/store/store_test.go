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
		if len(Key("K#s", seq)) != len("K#s")+1+seqDigits {
			t.Errorf("Key(K#s, %d) has the wrong length", seq)
		}
	}
}

func TestSplitKey(t *testing.T) {
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
		route, seq, ok := splitKey(tc.key)
		if route != tc.route || seq != tc.seq || ok != tc.ok {
			t.Errorf("splitKey(%q) = %q, %d, %v, want %q, %d, %v", tc.key, route, seq, ok, tc.route, tc.seq, tc.ok)
		}
	}
}
