package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/interlink-go/interlink/internal/bus"
)

// Defaults of the byte bounds, as the help text gives them.
const (
	defaultQueueBytes = "8MiB"
	defaultTotalBytes = "128MiB"
)

// maxBytesSetting bounds --queue-bytes and --total-bytes, far above any
// disk, so that sums of sizes cannot overflow.
const maxBytesSetting = 1 << 50

// byteUnits are the suffixes parseBytes takes, binary multiples all.
var byteUnits = []struct {
	suffix string
	shift  uint
}{{"KiB", 10}, {"MiB", 20}, {"GiB", 30}, {"TiB", 40}}

// parseBytes parses a size in bytes: a whole number, optionally followed by
// KiB, MiB, GiB or TiB.
func parseBytes(s string) (int64, error) {
	num, shift := s, uint(0)
	for _, u := range byteUnits {
		if n, ok := strings.CutSuffix(s, u.suffix); ok {
			num, shift = n, u.shift
			break
		}
	}
	n, err := strconv.ParseUint(num, 10, 64)
	if err != nil {
		return 0, errors.New("want a whole number of bytes, optionally with KiB, MiB, GiB or TiB, such as 128MiB")
	}
	if n > maxBytesSetting>>shift {
		return 0, fmt.Errorf("at most %d bytes", int64(maxBytesSetting))
	}
	return int64(n << shift), nil
}

// byteBounds resolves --queue-bytes and --total-bytes from their raw flag
// values. A route must hold at least the largest message the bus accepts,
// and the total at least one route's worth. With NATS there is no
// per-route byte bound to set (see store.NATS), so giving one is a
// mistake; route is then 0. When ok is false the problem has been reported
// and code is the status to exit with.
func (c *cli) byteBounds(queueBytes, totalBytes string, nats bool) (route, total int64, code int, ok bool) {
	value, source := c.setting(totalBytes, "--total-bytes", "INTERLINK_TOTAL_BYTES", defaultTotalBytes)
	total, err := parseBytes(value)
	if err != nil {
		return 0, 0, c.fail(exitUsage, fmt.Sprintf("%s %q: %v", source, value, err), helpHint), false
	}
	value, source = c.setting(queueBytes, "--queue-bytes", "INTERLINK_QUEUE_BYTES", "")
	if nats {
		if value != "" {
			return 0, 0, c.fail(exitUsage, fmt.Sprintf("%s does not apply with --nats: JetStream has no byte limit per subject", source),
				"leave it out; --total-bytes bounds the stream as a whole"), false
		}
		if total < bus.MaxEntryBytes {
			return 0, 0, c.fail(exitUsage, fmt.Sprintf("--total-bytes %d: at least %d, the largest message the bus takes", total, bus.MaxEntryBytes), helpHint), false
		}
		return 0, total, exitOK, true
	}
	if value == "" {
		value, source = defaultQueueBytes, "--queue-bytes"
	}
	if route, err = parseBytes(value); err != nil {
		return 0, 0, c.fail(exitUsage, fmt.Sprintf("%s %q: %v", source, value, err), helpHint), false
	}
	if route < bus.MaxEntryBytes {
		return 0, 0, c.fail(exitUsage, fmt.Sprintf("%s %q: at least %d bytes, so that a route holds the largest message the bus takes", source, value, bus.MaxEntryBytes), helpHint), false
	}
	if total < route {
		return 0, 0, c.fail(exitUsage, fmt.Sprintf("--total-bytes %d is below --queue-bytes %d", total, route),
			"the total bounds all routes together; give it at least one route's bound"), false
	}
	return route, total, exitOK, true
}
