package budget

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Default limits. Twenty automatic wake-ups in ten minutes is one every
// thirty seconds for ten minutes on end: far more than a person's
// collaboration needs, and reached within minutes by two sessions that
// answer each other on their own. Sends are allowed a little more, since a
// session also writes without being woken (reports, several peers on one
// task).
var (
	DefaultWake = Limit{N: 20, Per: 10 * time.Minute}
	DefaultSend = Limit{N: 30, Per: 10 * time.Minute}
)

// Limit is at most N events in any window of length Per. The zero Limit
// is off: nothing is counted against it.
type Limit struct {
	N   int
	Per time.Duration
}

// Off reports whether l limits nothing.
func (l Limit) Off() bool { return l.N <= 0 }

// Window returns the length of l's window the way String writes it: 10m,
// 1h30m, 45s.
func (l Limit) Window() string { return shortDuration(l.Per) }

// String returns l as [ParseLimit] reads it: "N/D" or "off".
func (l Limit) String() string {
	if l.Off() {
		return "off"
	}
	return strconv.Itoa(l.N) + "/" + shortDuration(l.Per)
}

// shortDuration writes d without zero units: 10m, 1h30m, 45s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// ErrLimit reports a limit that [ParseLimit] cannot read.
var ErrLimit = errors.New("budget: want N/DURATION, such as 20/10m, or off")

// maxWindow bounds the window of a limit: budgets are about a runaway
// exchange, not about a day's traffic.
const maxWindow = 24 * time.Hour

// ParseLimit reads a limit written as "N/DURATION" (a count from 1 to
// 10000 and a Go duration from one second to 24 hours, such as 20/10m or
// 5/30s) or "off".
func ParseLimit(s string) (Limit, error) {
	s = strings.TrimSpace(s)
	if strings.EqualFold(s, "off") {
		return Limit{}, nil
	}
	n, d, ok := strings.Cut(s, "/")
	if !ok {
		return Limit{}, fmt.Errorf("%w: %q", ErrLimit, s)
	}
	count, err := strconv.Atoi(strings.TrimSpace(n))
	if err != nil || count < 1 || count > 10000 {
		return Limit{}, fmt.Errorf("%w: %q: the count must be a whole number from 1 to 10000", ErrLimit, s)
	}
	per, err := time.ParseDuration(strings.TrimSpace(d))
	if err != nil || per < time.Second || per > maxWindow {
		return Limit{}, fmt.Errorf("%w: %q: the window must be a duration from 1s to 24h", ErrLimit, s)
	}
	return Limit{N: count, Per: per}, nil
}
