package main

import (
	"fmt"

	"github.com/interlink-go/interlink/internal/budget"
)

// budgets resolves the wake-up and send budgets from their flags, the
// environment and the defaults, as the server and doctor read them.
func (c *cli) budgets(wakeFlag, sendFlag string) (wake, send budget.Limit, err error) {
	value, source := c.setting(wakeFlag, "--wake-budget", "INTERLINK_WAKE_BUDGET", budget.DefaultWake.String())
	if wake, err = budget.ParseLimit(value); err != nil {
		return wake, send, fmt.Errorf("%s: %w", source, err)
	}
	value, source = c.setting(sendFlag, "--send-budget", "INTERLINK_SEND_BUDGET", budget.DefaultSend.String())
	if send, err = budget.ParseLimit(value); err != nil {
		return wake, send, fmt.Errorf("%s: %w", source, err)
	}
	return wake, send, nil
}
