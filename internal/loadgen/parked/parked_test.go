package parked

import (
	"context"
	"errors"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/interlink-go/interlink/internal/loadgen/measure"
	"github.com/interlink-go/interlink/internal/loadgen/target"
	"github.com/interlink-go/interlink/internal/testutil"
)

// TestParkedWakesEveryPollOnceAndReportsWhatTheyCost: the parked mode
// parks its polls on a bus process of its own, each on a route and a
// connection of its own, wakes every one of them with its own message,
// and reports the bus's memory and processor time while they waited.
func TestParkedWakesEveryPollOnceAndReportsWhatTheyCost(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts interlink-bus")
	}
	const polls = 50
	res, err := Run(t.Context(), Options{
		Polls:    polls,
		Senders:  4,
		Duration: 200 * time.Millisecond,
		Command:  []string{testutil.BuildBus(t)},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Log(res)
	if res.Ops != polls || res.Errors != 0 || res.Latency.Count != polls {
		t.Errorf("%d polls woken, %d latencies, %d errors; want %d, %d, 0", res.Ops, res.Latency.Count, res.Errors, polls, polls)
	}
	for key, want := range map[string]string{
		"polls": "50", "parked": "50", "lost": "0", "duplicates": "0", "misrouted": "0",
	} {
		if got := field(res, key); got != want {
			t.Errorf("%s=%q, want %q", key, got, want)
		}
	}
	if res.Latency.P50 <= 0 || res.Latency.P99 < res.Latency.P50 {
		t.Errorf("wake latencies %+v", res.Latency)
	}
	if runtime.GOOS != "linux" {
		return
	}
	if got := field(res, "bus_conns"); got != strconv.Itoa(polls) {
		t.Errorf("the bus holds %s connections for %d parked polls", got, polls)
	}
	if res.RSSBefore <= 0 || res.RSSAfter <= 0 {
		t.Errorf("memory not read: before %d, after %d", res.RSSBefore, res.RSSAfter)
	}
	for _, key := range []string{"per_poll", "bus_cpu", "floor_p50", "bus_nofile"} {
		if field(res, key) == "" {
			t.Errorf("no %s in %v", key, res)
		}
	}
	if !strings.HasSuffix(field(res, "bus_cpu"), "%") {
		t.Errorf("bus_cpu=%q, want a percentage", field(res, "bus_cpu"))
	}
}

// TestParkedRefusesMorePollsThanTheFileLimitAllows: asked for more polls
// than a process may open files for, the mode says so, with the limit
// and how many polls fit, before it starts a bus or opens a connection.
func TestParkedRefusesMorePollsThanTheFileLimitAllows(t *testing.T) {
	_, hard, ok := target.RaiseFileLimit(0)
	if !ok {
		t.Skip("this system does not tell its open-file limit")
	}
	if hard >= parkedFiles(MaxPolls, 1) {
		t.Skipf("the hard limit of %d files fits more polls than the mode allows", hard)
	}
	fits := int(hard) - 1 - parkedMargin
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	_, err := Run(ctx, Options{
		Polls: fits + 1,
		// A bus that never starts: the check must come first.
		Command: []string{"/nonexistent/interlink-bus"},
	}, nil)
	if !errors.Is(err, ErrFileLimit) {
		t.Fatalf("err = %v, want %v", err, ErrFileLimit)
	}
	for _, want := range []string{strconv.FormatUint(hard, 10), "at most " + strconv.Itoa(fits) + " polls fit"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not say %q", err, want)
		}
	}
}

// TestParkedFilesCountEachSideOfEveryPoll: the check allows exactly the
// polls whose connections, senders and margin fit the limit, in the
// load generator as in the bus, and names the process that is short.
func TestParkedFilesCountEachSideOfEveryPoll(t *testing.T) {
	const senders = 3
	for _, tc := range []struct {
		polls int
		limit uint64
		fits  bool
	}{
		{1000, 1000 + senders + parkedMargin, true},
		{1001, 1000 + senders + parkedMargin, false},
		{10_000, 20_000, true},
		{1, 100, false},
	} {
		err := checkParkedFiles("the bus process", tc.polls, senders, tc.limit)
		if (err == nil) != tc.fits {
			t.Errorf("%d polls, limit %d: err = %v, want fits=%v", tc.polls, tc.limit, err, tc.fits)
			continue
		}
		if err != nil && (!errors.Is(err, ErrFileLimit) || !strings.Contains(err.Error(), "the bus process")) {
			t.Errorf("%d polls, limit %d: %v", tc.polls, tc.limit, err)
		}
	}
}

// field returns the value of the result field key, or "".
func field(res measure.Result, key string) string {
	for _, f := range res.Extra {
		if f.Key == key {
			return f.Value
		}
	}
	return ""
}
