package policy

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/interlink-go/interlink/internal/identity"
)

func TestResolveSendTarget(t *testing.T) {
	own, k1, k2 := testKey(t, 0), testKey(t, 1), testKey(t, 2)
	p := mustPolicy(t, Entry{"laptop", k1}, Entry{"Desk", k2})
	tests := []struct {
		to       string
		wantKey  identity.PublicKey
		wantName string
		wantErr  bool
	}{
		{to: "self", wantKey: own, wantName: "self"},
		{to: "SELF", wantKey: own, wantName: "self"},
		{to: " Self\n", wantKey: own, wantName: "self"},
		{to: "laptop", wantKey: k1, wantName: "laptop"},
		{to: "Desk", wantKey: k2, wantName: "Desk"},
		{to: "desk", wantErr: true},
		{to: " Desk", wantErr: true},
		{to: "Laptop", wantErr: true},
		{to: "laptop ", wantErr: true},
		{to: k1.String(), wantErr: true},
		{to: k1.Fingerprint(), wantErr: true},
		{to: own.String(), wantErr: true},
		{to: "", wantErr: true},
	}
	for _, tt := range tests {
		k, name, err := p.ResolveSendTarget(tt.to, own)
		if tt.wantErr {
			if !errors.Is(err, ErrUnknownPeer) {
				t.Errorf("ResolveSendTarget(%q) = %s, %q, %v; want ErrUnknownPeer", tt.to, k, name, err)
			} else if !strings.Contains(err.Error(), `known petnames: "Desk", "laptop"`) {
				t.Errorf("error %q does not list the petnames", err)
			}
			continue
		}
		if err != nil || k != tt.wantKey || name != tt.wantName {
			t.Errorf("ResolveSendTarget(%q) = %s, %q, %v; want %s, %q", tt.to, k, name, err, tt.wantKey, tt.wantName)
		}
	}

	var empty Policy
	if _, _, err := empty.ResolveSendTarget("x", own); err == nil || !strings.Contains(err.Error(), "no peers") {
		t.Errorf("error for an empty policy = %v", err)
	}
}

// sameFingerprint returns a valid key other than k that shares its first
// 31 bytes, and so its fingerprint.
func sameFingerprint(tb testing.TB, k identity.PublicKey) identity.PublicKey {
	tb.Helper()
	for b := 1; b < 256; b++ {
		other := k
		other[31] ^= byte(b)
		if _, err := identity.ParsePublicKey(other.String()); err == nil {
			if other.Fingerprint() != k.Fingerprint() {
				tb.Fatal("fingerprints differ")
			}
			return other
		}
	}
	tb.Fatal("no key with the same fingerprint found")
	return k
}

func TestResolveRoster(t *testing.T) {
	k1, k2, k3 := testKey(t, 1), testKey(t, 2), testKey(t, 3)
	twin := sameFingerprint(t, k3)
	roster := []RosterEntry{
		{Key: k1, Name: "alice"},
		{Key: k1, Name: "alice"}, // a second session of the same key
		{Key: k1, Name: "alice-laptop"},
		{Key: k2, Name: "bob"},
		{Key: k2, Name: "shared"},
		{Key: k3, Name: "shared"},
		{Key: twin, Name: "twin"},
		{Key: k2, Name: k1.Fingerprint()}, // a name that looks like another key's fingerprint
		{Key: k3, Name: k2.String()},      // a name that looks like another key
	}
	tests := []struct {
		name      string
		target    string
		want      identity.PublicKey
		ambiguous []identity.PublicKey
	}{
		{name: "full key", target: k1.String(), want: k1},
		{name: "full key before a name", target: k2.String(), want: k2},
		{name: "fingerprint", target: k2.Fingerprint(), want: k2},
		{name: "fingerprint before a name", target: k1.Fingerprint(), want: k1},
		{name: "name on two sessions of one key", target: "alice", want: k1},
		{name: "second name of a key", target: "alice-laptop", want: k1},
		{name: "twin by full key", target: twin.String(), want: twin},
		{name: "twin by name", target: "twin", want: twin},
		{name: "ambiguous fingerprint", target: k3.Fingerprint(), ambiguous: sortedKeys(k3, twin)},
		{name: "ambiguous name", target: "shared", ambiguous: sortedKeys(k2, k3)},
		{name: "not trimmed", target: " alice"},
		{name: "case-sensitive", target: "Alice"},
		{name: "fingerprint prefix", target: k1.Fingerprint()[:7]},
		{name: "unknown key", target: testKey(t, 9).String()},
		{name: "empty", target: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k, err := ResolveRoster(tt.target, roster)
			switch {
			case tt.ambiguous != nil:
				var ae *AmbiguousError
				if !errors.As(err, &ae) || !errors.Is(err, ErrAmbiguous) {
					t.Fatalf("ResolveRoster = %s, %v; want an AmbiguousError", k, err)
				}
				if diff := cmp.Diff(&AmbiguousError{Target: tt.target, Keys: tt.ambiguous}, ae); diff != "" {
					t.Errorf("error (-want +got):\n%s", diff)
				}
				if !strings.Contains(err.Error(), "full key") {
					t.Errorf("error %q does not ask for the full key", err)
				}
			case tt.want == identity.PublicKey{}:
				if !errors.Is(err, ErrUnknownPeer) {
					t.Errorf("ResolveRoster = %s, %v; want ErrUnknownPeer", k, err)
				}
			default:
				if err != nil || k != tt.want {
					t.Errorf("ResolveRoster = %s, %v; want %s", k, err, tt.want)
				}
			}
		})
	}
	if _, err := ResolveRoster("alice", nil); !errors.Is(err, ErrUnknownPeer) {
		t.Errorf("empty roster: %v, want ErrUnknownPeer", err)
	}
}

func sortedKeys(a, b identity.PublicKey) []identity.PublicKey {
	if a.String() > b.String() {
		a, b = b, a
	}
	return []identity.PublicKey{a, b}
}

func TestResolvePeer(t *testing.T) {
	k1, k2, k3 := testKey(t, 1), testKey(t, 2), testKey(t, 3)
	p := mustPolicy(t, Entry{"laptop", k1}, Entry{"bob", k3})
	roster := []RosterEntry{
		{Key: k2, Name: "laptop"}, // claims an existing petname
		{Key: k2, Name: "bob-desk"},
		{Key: k3, Name: "bob"},
	}
	tests := []struct {
		target   string
		wantKey  identity.PublicKey
		wantName string
		wantErr  error
	}{
		{target: "laptop", wantKey: k1, wantName: "laptop"},
		{target: "  laptop\n", wantKey: k1, wantName: "laptop"},
		{target: "bob", wantKey: k3, wantName: "bob"},
		{target: "bob-desk", wantKey: k2},
		{target: " " + k2.String(), wantKey: k2},
		{target: k2.Fingerprint(), wantKey: k2},
		{target: k1.String(), wantErr: ErrUnknownPeer}, // a peer, but not online
		{target: "Laptop", wantErr: ErrUnknownPeer},
		{target: "", wantErr: ErrUnknownPeer},
	}
	for _, tt := range tests {
		k, name, err := p.ResolvePeer(tt.target, roster)
		if tt.wantErr != nil {
			if !errors.Is(err, tt.wantErr) {
				t.Errorf("ResolvePeer(%q) = %s, %q, %v; want %v", tt.target, k, name, err, tt.wantErr)
			} else if !strings.Contains(err.Error(), "petname") {
				t.Errorf("error %q does not mention petnames", err)
			}
			continue
		}
		if err != nil || k != tt.wantKey || name != tt.wantName {
			t.Errorf("ResolvePeer(%q) = %s, %q, %v; want %s, %q", tt.target, k, name, err, tt.wantKey, tt.wantName)
		}
	}
}
