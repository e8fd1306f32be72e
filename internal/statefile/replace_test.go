package statefile

import (
	"errors"
	"testing"
)

func TestRenameRetry(t *testing.T) {
	busy := errors.New("in use")
	fatal := errors.New("no such folder")
	retryable := func(err error) bool { return errors.Is(err, busy) }
	tests := []struct {
		name     string
		results  []error // what each call returns; the last repeats
		attempts int
		calls    int
		want     error
	}{
		{"first try", []error{nil}, 5, 1, nil},
		{"busy then free", []error{busy, busy, nil}, 5, 3, nil},
		{"busy throughout", []error{busy}, 4, 4, busy},
		{"other error at once", []error{fatal}, 5, 1, fatal},
		{"busy then other error", []error{busy, fatal}, 5, 2, fatal},
	}
	for _, tt := range tests {
		calls := 0
		err := renameRetry(func() error {
			r := tt.results[min(calls, len(tt.results)-1)]
			calls++
			return r
		}, retryable, tt.attempts, 0)
		if !errors.Is(err, tt.want) || (tt.want == nil && err != nil) || calls != tt.calls {
			t.Errorf("%s: err %v after %d calls; want %v after %d", tt.name, err, calls, tt.want, tt.calls)
		}
	}
}
