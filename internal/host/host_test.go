package host

import (
	"errors"
	"testing"
)

func TestParseTakesOnlyTheTwoNamesAsWritten(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want Kind
		err  error
	}{
		{"claude", Claude, nil},
		{"codex", Codex, nil},
		{"", "", ErrUnknown},
		{"Claude", "", ErrUnknown},
		{" codex", "", ErrUnknown},
		{"cursor", "", ErrUnknown},
	} {
		got, err := Parse(tt.in)
		if got != tt.want || !errors.Is(err, tt.err) {
			t.Errorf("Parse(%q) = %q, %v; want %q, %v", tt.in, got, err, tt.want, tt.err)
		}
	}
}
