package policy

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/statefile"
	"github.com/interlink-go/interlink/internal/untrusted"
)

func TestOpenMissing(t *testing.T) {
	dir := t.TempDir()
	dangling := filepath.Join(dir, "link.json")
	if err := os.Symlink(filepath.Join(dir, "gone.json"), dangling); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{filepath.Join(dir, "peers.json"), dangling} {
		_, err := Open(path)
		if !errors.Is(err, ErrMissing) {
			t.Errorf("Open(%s) = %v, want ErrMissing", path, err)
		} else if !strings.Contains(err.Error(), "{}") {
			t.Errorf("error %q gives no hint about an empty file", err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "peers.json")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Open created the file: %v", err)
	}
}

func TestOpenInvalid(t *testing.T) {
	k := testKey(t, 1)
	for _, content := range []string{"", "[]", `{"a": {"key": "x"}}`, policyJSON(Entry{"a", k}, Entry{"b", k})} {
		path := writePeers(t, content)
		if _, err := Open(path); !errors.Is(err, ErrInvalid) {
			t.Errorf("Open with %q = %v, want ErrInvalid", content, err)
		}
		checkUnchanged(t, path, []byte(content))
	}
}

func TestOpenResolvesPath(t *testing.T) {
	target := writePeers(t, "{}")
	link := filepath.Join(t.TempDir(), "peers-link.json")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	s, err := Open(link)
	if err != nil {
		t.Fatal(err)
	}
	wantPath, err := filepath.EvalSymlinks(target)
	if err != nil {
		t.Fatal(err)
	}
	if s.Path() != wantPath {
		t.Errorf("Path() = %s, want %s", s.Path(), wantPath)
	}
	if want := wantPath + ".lock"; s.LockPath() != want {
		t.Errorf("LockPath() = %s, want %s", s.LockPath(), want)
	}
}

func TestLoadAfterChange(t *testing.T) {
	s := newStore(t, "{}")
	if err := os.WriteFile(s.Path(), []byte("not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Load(); !errors.Is(err, ErrInvalid) {
		t.Errorf("Load of a broken file = %v, want ErrInvalid", err)
	}
	if err := s.Add("a", testKey(t, 1)); !errors.Is(err, ErrInvalid) {
		t.Errorf("Add to a broken file = %v, want ErrInvalid", err)
	}
	checkUnchanged(t, s.Path(), []byte("not json"))
	if err := os.Remove(s.Path()); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Load(); !errors.Is(err, ErrMissing) {
		t.Errorf("Load of a removed file = %v, want ErrMissing", err)
	}
	if err := s.Add("a", testKey(t, 1)); !errors.Is(err, ErrMissing) {
		t.Errorf("Add to a removed file = %v, want ErrMissing", err)
	}
	if _, err := os.Stat(s.Path()); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Add recreated the file: %v", err)
	}
	// Put back so the cleanup check passes.
	if err := os.WriteFile(s.Path(), []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestAddNameReassignment(t *testing.T) {
	k1, k2 := testKey(t, 1), testKey(t, 2)
	s := newStore(t, "{}")
	if err := s.Add("laptop", k1); err != nil {
		t.Fatal(err)
	}
	before := readFile(t, s.Path())

	t.Run("name to another key", func(t *testing.T) {
		err := s.Add("laptop", k2)
		var ce *ConflictError
		if !errors.As(err, &ce) || !errors.Is(err, ErrConflict) {
			t.Fatalf("Add = %v, want a ConflictError", err)
		}
		want := ConflictError{Name: "laptop", Key: k2, ExistingName: "laptop", ExistingKey: k1}
		if diff := cmp.Diff(want, *ce); diff != "" {
			t.Errorf("conflict (-want +got):\n%s", diff)
		}
		if ce.KeyListed() || !strings.Contains(err.Error(), "never reassigned") {
			t.Errorf("message does not explain the name conflict: %v", err)
		}
		checkUnchanged(t, s.Path(), before)
	})
	t.Run("key under a second name", func(t *testing.T) {
		err := s.Add("desk", k1)
		var ce *ConflictError
		if !errors.As(err, &ce) || !errors.Is(err, ErrConflict) {
			t.Fatalf("Add = %v, want a ConflictError", err)
		}
		want := ConflictError{Name: "desk", Key: k1, ExistingName: "laptop", ExistingKey: k1}
		if diff := cmp.Diff(want, *ce); diff != "" {
			t.Errorf("conflict (-want +got):\n%s", diff)
		}
		if !ce.KeyListed() || !strings.Contains(err.Error(), `already listed as "laptop"`) {
			t.Errorf("message does not explain the key conflict: %v", err)
		}
		checkUnchanged(t, s.Path(), before)
	})
	t.Run("same pair again", func(t *testing.T) {
		if err := s.Add("laptop", k1); err != nil {
			t.Fatalf("repeat Add = %v, want success", err)
		}
		checkUnchanged(t, s.Path(), before)
	})
	p := mustLoad(t, s)
	if diff := cmp.Diff([]Entry{{"laptop", k1}}, p.Entries()); diff != "" {
		t.Errorf("entries (-want +got):\n%s", diff)
	}
}

func TestAddRewritesFile(t *testing.T) {
	k1 := testKey(t, 1)
	s := newStore(t, `{"laptop": {"may": "*", "key": "`+k1.String()+`"}}`)
	if err := s.Add("laptop", k1); err != nil {
		t.Fatal(err)
	}
	want := "{\n  \"laptop\": {\n    \"key\": \"" + k1.String() + "\"\n  }\n}\n"
	if got := string(readFile(t, s.Path())); got != want {
		t.Errorf("file after a no-op Add = %q, want %q", got, want)
	}
}

func TestAddRefuses(t *testing.T) {
	k := testKey(t, 1)
	small := mustParseKey(t, identityKey)
	if !small.SmallOrder() {
		t.Fatal("identity point is not of small order")
	}
	tests := []struct {
		name    string
		petname string
		key     identity.PublicKey
		want    error
		msg     string
	}{
		{name: "self", petname: "self", key: k, want: ErrReservedName},
		{name: "SELF", petname: "SELF", key: k, want: ErrReservedName},
		{name: "Interlink", petname: "Interlink", key: k, want: ErrReservedName},
		{name: "interlink lower case", petname: "interlink", key: k, want: ErrReservedName},
		{name: "self with spaces", petname: " self ", key: k, want: ErrInvalidName},
		{name: "empty", petname: "", key: k, want: ErrInvalidName},
		{name: "blank", petname: " \t", key: k, want: ErrInvalidName},
		{name: "invisible", petname: "\u200b\u202e", key: k, want: ErrInvalidName},
		{name: "invalid UTF-8", petname: "a\xff", key: k, want: ErrInvalidName},
		{name: "quoted Interlink", petname: `"Interlink"`, key: k, want: ErrInvalidName},
		{name: "quote inside Interlink", petname: `Inter"link`, key: k, want: ErrInvalidName},
		{name: "angle-bracketed self", petname: "<self>", key: k, want: ErrInvalidName},
		{name: "INTERLINK", petname: "INTERLINK", key: k, want: ErrReservedName},
		{name: "full-width Interlink", petname: "Ｉｎｔｅｒｌｉｎｋ", key: k, want: ErrReservedName},
		{name: "zero-width space in Interlink", petname: "Inter\u200blink", key: k, want: ErrInvalidName},
		{name: "bracket inside self", petname: "se>lf", key: k, want: ErrInvalidName},
		{name: "apostrophe", petname: "bob's", key: k, want: ErrInvalidName, msg: "U+0027"},
		{name: "65 characters", petname: strings.Repeat("a", 65), key: k, want: ErrInvalidName, msg: "longer than 64"},
		{name: "small-order key", petname: "zero", key: small, want: ErrSmallOrderKey, msg: "can never sign a valid message"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newStore(t, "{}")
			err := s.Add(tt.petname, tt.key)
			if !errors.Is(err, tt.want) {
				t.Fatalf("Add(%q) = %v, want %v", tt.petname, err, tt.want)
			}
			if !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("error %q does not say %q", err, tt.msg)
			}
			checkUnchanged(t, s.Path(), []byte("{}"))
		})
	}
}

// Add refuses a petname that reads alike another key's petname, in any
// script or case or with invisible characters, and says which; nothing
// changes.
func TestAddRefusesANameThatReadsAlikeAnotherKeysPetname(t *testing.T) {
	k1, k2 := testKey(t, 1), testKey(t, 2)
	for _, name := range []string{"Alice", "ALICE", "\u0430lice", "a\u13DEice", "\uA4EElice", "alice\u2800", "a.lice"} {
		t.Run(name, func(t *testing.T) {
			s := newStore(t, policyJSON(Entry{"alice", k1}))
			before := readFile(t, s.Path())
			err := s.Add(name, k2)
			ce, ok := errors.AsType[*ConflictError](err)
			if !ok || !errors.Is(err, ErrConflict) {
				t.Fatalf("Add(%+q) = %v, want a ConflictError", name, err)
			}
			want := ConflictError{Name: name, Key: k2, ExistingName: "alice", ExistingKey: k1}
			if diff := cmp.Diff(want, *ce); diff != "" {
				t.Errorf("conflict (-want +got):\n%s", diff)
			}
			if !ce.LooksAlike() || !strings.Contains(err.Error(), `reads alike "alice"`) {
				t.Errorf("message does not say which petname it reads alike: %v", err)
			}
			checkUnchanged(t, s.Path(), before)
			if _, err := s.AddForPairing(name, k2); !errors.Is(err, ErrConflict) {
				t.Errorf("AddForPairing(%+q) = %v, want a conflict", name, err)
			}
		})
	}
	s := newStore(t, policyJSON(Entry{"alice", k1}))
	if err := s.Add("alice-2", k2); err != nil {
		t.Errorf("Add of a name with other letters: %v", err)
	}
}

func TestAddAccepted(t *testing.T) {
	k1, k2, k3, k4 := testKey(t, 1), testKey(t, 2), testKey(t, 3), testKey(t, 4)
	long64 := strings.Repeat("é", untrusted.NameLimit)
	tests := []struct {
		name    string
		initial []Entry
		claimed string
		key     identity.PublicKey
		want    string
	}{
		{name: "free name", claimed: "laptop", key: k1, want: "laptop"},
		{name: "cleaned name", claimed: " lap\ntop\u202e ", key: k1, want: "laptop"},
		{name: "name of another key", initial: []Entry{{"laptop", k2}}, claimed: "laptop", key: k1, want: "laptop-2"},
		{name: "name and name-2 taken", initial: []Entry{{"laptop", k2}, {"laptop-2", k3}}, claimed: "laptop", key: k1, want: "laptop-3"},
		{name: "look-alike of another key's name", initial: []Entry{{"bob", k2}}, claimed: "b\u043eb", key: k1, want: "b\u043eb-2"},
		{name: "look-alike of a suffixed name", initial: []Entry{{"bob", k2}, {"bob-2", k3}}, claimed: "b\u043eb", key: k1, want: "b\u043eb-3"},
		{name: "capital I for small L", initial: []Entry{{"Bill", k2}}, claimed: "BiII", key: k1, want: "BiII-2"},
		{name: "accent", initial: []Entry{{"Jose", k2}}, claimed: "Jos\u00e9", key: k1, want: "Jos\u00e9-2"},
		{name: "other case", initial: []Entry{{"bob", k2}}, claimed: "Bob", key: k1, want: "Bob-2"},
		{name: "Hangul choseong filler", initial: []Entry{{"alice", k2}}, claimed: "alice\u115f", key: k1, want: "alice-2"},
		{name: "Hangul filler inside", initial: []Entry{{"alice", k2}}, claimed: "al\u3164ice", key: k1, want: "alice-2"},
		{name: "Cherokee letter", initial: []Entry{{"alice", k2}}, claimed: "a\u13DEice", key: k1, want: "a\u13DEice-2"},
		{name: "Lisu letter", initial: []Entry{{"alice", k2}}, claimed: "\uA4EElice", key: k1, want: "\uA4EElice-2"},
		{name: "braille blank after", initial: []Entry{{"alice", k2}}, claimed: "alice\u2800", key: k1, want: "alice\u2800-2"},
		{name: "upper case with a Lisu letter", initial: []Entry{{"alice", k2}}, claimed: "\uA4EELICE", key: k1, want: "\uA4EELICE-2"},
		{name: "Lisu I in a reserved word", claimed: "\uA4F2NTERLINK", key: k1, want: k1.Fingerprint()},
		{name: "kra in a reserved word", claimed: "Interlin\u0138", key: k1, want: k1.Fingerprint()},
		{name: "Hangul filler in a reserved word", claimed: "Inter\u115Flink", key: k1, want: k1.Fingerprint()},
		{name: "small i is not small L", initial: []Entry{{"self-test", k2}}, claimed: "seif-test", key: k1, want: "seif-test"},
		{name: "gap in suffixes", initial: []Entry{{"laptop", k2}, {"laptop-3", k3}}, claimed: "laptop", key: k1, want: "laptop-2"},
		{name: "empty claim", claimed: "", key: k1, want: k1.Fingerprint()},
		{name: "control-only claim", claimed: "\n\t\u200b\r", key: k1, want: k1.Fingerprint()},
		{name: "self", claimed: "self", key: k1, want: k1.Fingerprint()},
		{name: "SELF with spaces", claimed: "  SELF ", key: k1, want: k1.Fingerprint()},
		{name: "Interlink", claimed: "interlink", key: k1, want: k1.Fingerprint()},
		{name: "quoted Interlink", claimed: `"Interlink"`, key: k1, want: k1.Fingerprint()},
		{name: "quote inside Interlink", claimed: `Inter"link`, key: k1, want: k1.Fingerprint()},
		{name: "angle-bracketed self", claimed: "<self>", key: k1, want: k1.Fingerprint()},
		{name: "INTERLINK", claimed: "INTERLINK", key: k1, want: k1.Fingerprint()},
		{name: "full-width Interlink", claimed: "Ｉｎｔｅｒｌｉｎｋ", key: k1, want: k1.Fingerprint()},
		{name: "zero-width space in Interlink", claimed: "Inter\u200blink", key: k1, want: k1.Fingerprint()},
		{name: "bracket inside self", claimed: "se>lf", key: k1, want: k1.Fingerprint()},
		{name: "characters rendering would change are dropped", claimed: "bob's <desk> & `co`", key: k1, want: "bobs desk  co"},
		{name: "fingerprint taken", initial: []Entry{{k1.Fingerprint(), k2}}, claimed: "self", key: k1, want: k1.Fingerprint() + "-2"},
		{name: "key already listed", initial: []Entry{{"desk", k1}}, claimed: "laptop", key: k1, want: "desk"},
		{name: "key already listed, claim taken", initial: []Entry{{"desk", k1}, {"laptop", k2}}, claimed: "laptop", key: k1, want: "desk"},
		{name: "long claim", claimed: strings.Repeat("x", 200), key: k1, want: strings.Repeat("x", untrusted.NameLimit)},
		{name: "64 characters need a suffix", initial: []Entry{{long64, k2}}, claimed: long64, key: k1,
			want: strings.Repeat("é", untrusted.NameLimit-2) + "-2"},
		{name: "64 characters need suffix 10", initial: []Entry{
			{long64, k2}, {long64[:2*62] + "-2", k3}, {long64[:2*62] + "-3", k4},
			{long64[:2*62] + "-4", testKey(t, 5)}, {long64[:2*62] + "-5", testKey(t, 6)}, {long64[:2*62] + "-6", testKey(t, 7)},
			{long64[:2*62] + "-7", testKey(t, 8)}, {long64[:2*62] + "-8", testKey(t, 9)}, {long64[:2*62] + "-9", testKey(t, 10)},
		}, claimed: long64, key: k1, want: strings.Repeat("é", untrusted.NameLimit-3) + "-10"},
		{name: "cut leaves no trailing space", initial: []Entry{{strings.Repeat("a", 62) + " b", k2}},
			claimed: strings.Repeat("a", 62) + " b", key: k1, want: strings.Repeat("a", 62) + "-2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newStore(t, policyJSON(tt.initial...))
			got, err := s.AddAccepted(tt.claimed, tt.key)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("AddAccepted(%q) = %q, want %q", tt.claimed, got, tt.want)
			}
			if n := utf8.RuneCountInString(got); n > untrusted.NameLimit {
				t.Errorf("petname %q has %d characters, more than %d", got, n, untrusted.NameLimit)
			}
			p := mustLoad(t, s)
			if name, ok := p.Petname(tt.key); !ok || name != tt.want {
				t.Errorf("stored petname = %q, %v; want %q", name, ok, tt.want)
			}
			// Nothing else changed.
			wantLen := len(tt.initial) + 1
			if slices.ContainsFunc(tt.initial, func(e Entry) bool { return e.Key == tt.key }) {
				wantLen--
			}
			if p.Len() != wantLen {
				t.Errorf("policy has %d entries, want %d", p.Len(), wantLen)
			}
			for _, e := range tt.initial {
				if k, ok := p.Key(e.Name); !ok || k != e.Key {
					t.Errorf("entry %q changed: %s, %v", e.Name, k, ok)
				}
			}
		})
	}

	t.Run("small-order key", func(t *testing.T) {
		s := newStore(t, "{}")
		_, err := s.AddAccepted("zero", mustParseKey(t, identityKey))
		if !errors.Is(err, ErrSmallOrderKey) {
			t.Errorf("AddAccepted = %v, want ErrSmallOrderKey", err)
		}
		checkUnchanged(t, s.Path(), []byte("{}"))
	})
}

func TestAddForPairing(t *testing.T) {
	k1, k2 := testKey(t, 1), testKey(t, 2)
	t.Run("new key", func(t *testing.T) {
		s := newStore(t, "{}")
		got, err := s.AddForPairing("laptop", k1)
		if err != nil || got != "laptop" {
			t.Fatalf("AddForPairing = %q, %v; want laptop", got, err)
		}
		if name, _ := mustLoad(t, s).Petname(k1); name != "laptop" {
			t.Errorf("stored petname = %q", name)
		}
	})
	t.Run("keeps existing name", func(t *testing.T) {
		s := newStore(t, policyJSON(Entry{"desk", k1}, Entry{"laptop", k2}))
		got, err := s.AddForPairing("laptop", k1)
		if err != nil || got != "desk" {
			t.Fatalf("AddForPairing = %q, %v; want desk", got, err)
		}
		want := []Entry{{"desk", k1}, {"laptop", k2}}
		if diff := cmp.Diff(want, mustLoad(t, s).Entries()); diff != "" {
			t.Errorf("entries (-want +got):\n%s", diff)
		}
	})
	t.Run("name conflict", func(t *testing.T) {
		s := newStore(t, policyJSON(Entry{"laptop", k2}))
		before := readFile(t, s.Path())
		got, err := s.AddForPairing("laptop", k1)
		var ce *ConflictError
		if !errors.Is(err, ErrConflict) || !errors.As(err, &ce) || got != "" {
			t.Fatalf("AddForPairing = %q, %v; want a ConflictError", got, err)
		}
		if ce.ExistingKey != k2 {
			t.Errorf("conflict names key %s, want %s", ce.ExistingKey, k2)
		}
		checkUnchanged(t, s.Path(), before)
	})
	t.Run("reserved name", func(t *testing.T) {
		s := newStore(t, "{}")
		if _, err := s.AddForPairing("self", k1); !errors.Is(err, ErrReservedName) {
			t.Errorf("AddForPairing = %v, want ErrReservedName", err)
		}
		checkUnchanged(t, s.Path(), []byte("{}"))
	})
}

func TestRemove(t *testing.T) {
	k1, k2 := testKey(t, 1), testKey(t, 2)
	s := newStore(t, policyJSON(Entry{"laptop", k1}, Entry{"desk", k2}))
	for _, name := range []string{"Laptop", " laptop", "nothing"} {
		if removed, err := s.Remove(name); err != nil || removed {
			t.Errorf("Remove(%q) = %v, %v; want false, nil", name, removed, err)
		}
	}
	if removed, err := s.Remove("laptop"); err != nil || !removed {
		t.Fatalf("Remove(laptop) = %v, %v; want true, nil", removed, err)
	}
	p := mustLoad(t, s)
	if diff := cmp.Diff([]Entry{{"desk", k2}}, p.Entries()); diff != "" {
		t.Errorf("entries (-want +got):\n%s", diff)
	}
	if removed, err := s.Remove("laptop"); err != nil || removed {
		t.Errorf("second Remove = %v, %v; want false, nil", removed, err)
	}
	// After removal the key may come back under another name.
	if err := s.Add("new-laptop", k1); err != nil {
		t.Errorf("Add after Remove = %v", err)
	}
}

func TestSiblingSeesChanges(t *testing.T) {
	k1, k2 := testKey(t, 1), testKey(t, 2)
	path := writePeers(t, policyJSON(Entry{"old", k2}))
	link := filepath.Join(t.TempDir(), "peers.json")
	if err := os.Symlink(path, link); err != nil {
		t.Fatal(err)
	}
	a, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Open(link)
	if err != nil {
		t.Fatal(err)
	}
	if a.LockPath() != b.LockPath() || a.Path() != b.Path() {
		t.Fatalf("stores differ: %s (%s) and %s (%s)", a.Path(), a.LockPath(), b.Path(), b.LockPath())
	}

	if err := a.Add("laptop", k1); err != nil {
		t.Fatal(err)
	}
	if name, ok := mustLoad(t, b).Petname(k1); !ok || name != "laptop" {
		t.Errorf("sibling sees %q, %v after an add; want laptop", name, ok)
	}
	if removed, err := b.Remove("old"); err != nil || !removed {
		t.Fatalf("Remove = %v, %v", removed, err)
	}
	if _, ok := mustLoad(t, a).Key("old"); ok {
		t.Error("first store still sees a removed peer")
	}
	// b's update started from the file, not from a snapshot of its own.
	if _, ok := mustLoad(t, a).Key("laptop"); !ok {
		t.Error("removal by the sibling lost the added peer")
	}
	// The link still points at the file, which was replaced in place.
	if target, err := os.Readlink(link); err != nil || target != path {
		t.Errorf("link = %q, %v; want %q", target, err, path)
	}
}

func TestLockPathIsDirectory(t *testing.T) {
	s := newStore(t, policyJSON(Entry{"desk", testKey(t, 2)}))
	if err := os.Mkdir(s.LockPath(), 0o700); err != nil {
		t.Fatal(err)
	}
	before := readFile(t, s.Path())
	if err := s.Add("laptop", testKey(t, 1)); !errors.Is(err, statefile.ErrLock) {
		t.Errorf("Add = %v, want statefile.ErrLock", err)
	}
	if _, err := s.Remove("desk"); !errors.Is(err, statefile.ErrLock) {
		t.Errorf("Remove = %v, want statefile.ErrLock", err)
	}
	checkUnchanged(t, s.Path(), before)
	if _, err := s.Load(); err != nil {
		t.Errorf("Load needs no lock, but failed: %v", err)
	}
}

func TestModePreserved(t *testing.T) {
	path := writePeers(t, "{}")
	if err := os.Chmod(path, 0o640); err != nil {
		t.Fatal(err)
	}
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Add("laptop", testKey(t, 1)); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != 0o640 {
		t.Errorf("mode after Add = %v, want 0640", got)
	}
	// A store never creates the file, so there is no new-file mode here.
	if _, err := Open(filepath.Join(t.TempDir(), "peers.json")); !errors.Is(err, ErrMissing) {
		t.Errorf("Open of a missing file = %v, want ErrMissing", err)
	}
}
