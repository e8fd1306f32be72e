package loadgen

import (
	"fmt"

	"github.com/interlink-go/interlink/internal/loadgen/target"
)

// natsDefaults checks the NATS settings of c, whose store is chosen, and
// fills in their defaults.
func (c Config) natsDefaults() (Config, error) {
	bad := func(format string, args ...any) (Config, error) {
		return c, fmt.Errorf("%w: %s", ErrConfig, fmt.Sprintf(format, args...))
	}
	if c.Buses == 0 {
		c.Buses = 1
	}
	if c.Store != StoreNATS {
		if c.NATSURL != "" || c.NATSSyncAlways || c.Buses != 1 {
			return bad("a NATS server, its sync setting and a second bus need the nats store")
		}
		return c, nil
	}
	switch {
	case c.Buses < 1 || c.Buses > 3:
		return bad("%d buses: want 1 to 3", c.Buses)
	case c.NATSURL != "" && c.NATSSyncAlways:
		return bad("the sync setting applies to the server this process starts, not to one at a URL")
	case c.NATSURL == "" && !target.EmbeddedNATS:
		return bad("this interlink-bus was built without a NATS server of its own: give one with --nats URL, " +
			"or build with -tags natsbench")
	}
	return c, nil
}
