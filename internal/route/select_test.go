package route

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// selectCase is one expectation for Select: either the id, or an error that
// errors.Is matches, plus the matches an AmbiguousError must list.
type selectCase struct {
	name    string
	q       Query
	want    string
	wantErr error
	matches []string
}

func runSelect(t *testing.T, tests []selectCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Select(tt.q)
			if tt.wantErr == nil {
				if err != nil {
					t.Fatalf("Select() error: %v", err)
				}
				if got != tt.want {
					t.Fatalf("Select() = %q, want %q", got, tt.want)
				}
				return
			}
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Select() = %q, %v; want error %v", got, err, tt.wantErr)
			}
			if got != "" {
				t.Errorf("Select() returned %q alongside an error", got)
			}
			var amb *AmbiguousError
			if !errors.As(err, &amb) {
				if tt.matches != nil {
					t.Fatalf("Select() error %T, want *AmbiguousError", err)
				}
				return
			}
			if diff := cmp.Diff(tt.matches, amb.Matches); diff != "" {
				t.Errorf("AmbiguousError.Matches mismatch (-want +got):\n%s", diff)
			}
			for _, id := range tt.matches {
				if !strings.Contains(err.Error(), fmt.Sprintf("%q", id)) {
					t.Errorf("error %q does not list %q", err, id)
				}
			}
		})
	}
}

func live(ids ...string) []Session {
	s := make([]Session, len(ids))
	for i, id := range ids {
		s[i] = Session{ID: id, Live: true}
	}
	return s
}

func away(ids ...string) []Session {
	s := make([]Session, len(ids))
	for i, id := range ids {
		s[i] = Session{ID: id}
	}
	return s
}

func mixed(parts ...[]Session) []Session {
	var all []Session
	for _, p := range parts {
		all = append(all, p...)
	}
	return all
}

func TestSelectHint(t *testing.T) {
	roster := mixed(live("abc123", "abd456"), away("ffee00", "abc1234"))
	runSelect(t, []selectCase{
		{name: "exact id", q: Query{Sessions: roster, Hint: "ffee00"}, want: "ffee00"},
		{name: "exact wins over longer id with same prefix", q: Query{Sessions: roster, Hint: "abc123"}, want: "abc123"},
		{name: "exact away session", q: Query{Sessions: roster, Hint: "abc1234"}, want: "abc1234"},
		{name: "unique prefix", q: Query{Sessions: roster, Hint: "abd"}, want: "abd456"},
		{name: "unique prefix of away session", q: Query{Sessions: roster, Hint: "ff"}, want: "ffee00"},
		{name: "hint is trimmed", q: Query{Sessions: roster, Hint: "  abd\t"}, want: "abd456"},
		{
			name: "ambiguous prefix lists both", q: Query{Sessions: roster, Hint: "abc1"},
			wantErr: ErrAmbiguous, matches: []string{"abc123", "abc1234"},
		},
		{
			name: "ambiguous prefix across live and away", q: Query{Sessions: roster, Hint: "ab"},
			wantErr: ErrAmbiguous, matches: []string{"abc123", "abc1234", "abd456"},
		},
		{name: "no match is verbatim", q: Query{Sessions: roster, Hint: "0123"}, want: "0123"},
		{name: "no roster is verbatim", q: Query{Hint: "0123"}, want: "0123"},
		{name: "hint beats sticky", q: Query{Sessions: roster, Hint: "abd", Sticky: "ffee00"}, want: "abd456"},
		{name: "blank hint means none", q: Query{Sessions: live("only"), Hint: " \t "}, want: "only"},
		{name: "invalid hint", q: Query{Sessions: roster, Hint: "../x"}, wantErr: ErrInvalidSession},
		{name: "hint with control character", q: Query{Sessions: roster, Hint: "ab\x1bc"}, wantErr: ErrInvalidSession},
	})
}

func TestSelectOwnSession(t *testing.T) {
	// The target is the caller's own key: own is the caller's session and
	// sib a sibling session of the same identity.
	const own, sib = "aa11", "bb22"
	runSelect(t, []selectCase{
		{name: "hint equal to own id", q: Query{Sessions: live(own, sib), Hint: own, Exclude: own}, wantErr: ErrOwnSession},
		{name: "hint equal to own id with spaces", q: Query{Sessions: live(own, sib), Hint: " " + own + " ", Exclude: own}, wantErr: ErrOwnSession},
		{name: "hint equal to own id off roster", q: Query{Sessions: live(sib), Hint: own, Exclude: own}, wantErr: ErrOwnSession},
		{name: "sibling by exact hint", q: Query{Sessions: live(own, sib), Hint: sib, Exclude: own}, want: sib},
		{name: "sibling by prefix", q: Query{Sessions: live(own, sib), Hint: "b", Exclude: own}, want: sib},
		{name: "prefix of own only is verbatim", q: Query{Sessions: live(own, sib), Hint: "aa", Exclude: own}, want: "aa"},
		{
			name: "prefix shared with own picks the other", q: Query{Sessions: live("ab1", "ab2"), Hint: "ab", Exclude: "ab1"},
			want: "ab2",
		},
		{name: "no hint picks the sibling", q: Query{Sessions: live(own, sib), Exclude: own}, want: sib},
		{name: "no hint, own alone", q: Query{Sessions: live(own), Exclude: own}, wantErr: ErrNoSession},
		{name: "sticky equal to own is ignored", q: Query{Sessions: live(own, sib), Sticky: own, Exclude: own}, want: sib},
		{name: "sticky equal to own, no sibling", q: Query{Sessions: live(own), Sticky: own, Exclude: own}, wantErr: ErrNoSession},
		{name: "sticky sibling still listed", q: Query{Sessions: mixed(live(own, "cc33"), away(sib)), Sticky: sib, Exclude: own}, want: sib},
		{name: "sticky sibling gone is not a guess", q: Query{Sessions: live(own), Sticky: sib, Exclude: own}, wantErr: ErrNoSession},
		{
			name: "own removed from ambiguity", q: Query{Sessions: live(own, sib, "cc33"), Exclude: own},
			wantErr: ErrAmbiguous, matches: []string{sib, "cc33"},
		},
	})
}

func TestSelectNoHint(t *testing.T) {
	runSelect(t, []selectCase{
		{name: "sticky live", q: Query{Sessions: live("s1", "s2"), Sticky: "s2"}, want: "s2"},
		{name: "sticky away beats live", q: Query{Sessions: mixed(live("s1"), away("s2")), Sticky: "s2"}, want: "s2"},
		{name: "sticky gone, single live", q: Query{Sessions: mixed(live("s1"), away("s3")), Sticky: "gone"}, want: "s1"},
		{name: "single live", q: Query{Sessions: live("s1")}, want: "s1"},
		{name: "single live among away", q: Query{Sessions: mixed(away("a1", "a2"), live("s1"))}, want: "s1"},
		{
			name: "several live", q: Query{Sessions: mixed(live("s2", "s1"), away("a1"))},
			wantErr: ErrAmbiguous, matches: []string{"s1", "s2"},
		},
		{
			name: "several live, sticky gone", q: Query{Sessions: live("s1", "s2"), Sticky: "gone"},
			wantErr: ErrAmbiguous, matches: []string{"s1", "s2"},
		},
		{name: "single away", q: Query{Sessions: away("a1")}, want: "a1"},
		{
			name: "several away", q: Query{Sessions: away("a2", "a1")},
			wantErr: ErrAmbiguous, matches: []string{"a1", "a2"},
		},
		{name: "none, sticky is speculative", q: Query{Sticky: "old"}, want: "old"},
		{name: "none, no sticky", q: Query{}, wantErr: ErrNoSession},
		{name: "empty ids are ignored", q: Query{Sessions: mixed(live(""), away(""))}, wantErr: ErrNoSession},
		{name: "duplicate id counts once", q: Query{Sessions: mixed(away("s1"), live("s1"))}, want: "s1"},
		{
			name: "duplicate live and away counts as live", q: Query{Sessions: mixed(away("s1", "s2"), live("s1"))},
			want: "s1",
		},
	})
}

func TestAmbiguousError(t *testing.T) {
	tests := []struct {
		name string
		err  *AmbiguousError
		want string
	}{
		{
			name: "with hint",
			err:  &AmbiguousError{Hint: "ab", Matches: []string{"ab1", "ab2"}},
			want: `route: ambiguous session: hint "ab" fits 2 sessions: "ab1", "ab2"`,
		},
		{
			name: "without hint",
			err:  &AmbiguousError{Matches: []string{"s1", "s2"}},
			want: `route: ambiguous session: no session hint and 2 sessions fit: "s1", "s2"`,
		},
		{
			name: "roster id with newline stays on one line",
			err:  &AmbiguousError{Matches: []string{"a\nb", "c"}},
			want: `route: ambiguous session: no session hint and 2 sessions fit: "a\nb", "c"`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.err.Error(); got != tt.want {
				t.Errorf("Error() = %q, want %q", got, tt.want)
			}
			if !errors.Is(tt.err, ErrAmbiguous) {
				t.Errorf("errors.Is(%v, ErrAmbiguous) = false", tt.err)
			}
		})
	}
}

func ExampleSelect() {
	id, err := Select(Query{
		Sessions: []Session{{ID: "1b4e28ba", Live: true}, {ID: "9c0d11f2", Live: false}},
		Hint:     "9c",
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(New("cG9zdGFs", id))
	// Output: cG9zdGFs#9c0d11f2
}
