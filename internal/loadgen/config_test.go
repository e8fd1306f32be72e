package loadgen

import (
	"errors"
	"testing"

	"github.com/interlink-go/interlink/internal/loadgen/parked"
)

// TestParkedConfigKeepsItsSettingsApart: --polls is for the parked mode
// only, and the parked mode starts its own bus.
func TestParkedConfigKeepsItsSettingsApart(t *testing.T) {
	bus := []string{"interlink-bus"}
	for name, c := range map[string]Config{
		"polls in wake":      {Mode: ModeWake, Polls: 10},
		"url":                {Mode: ModeParked, URL: "http://127.0.0.1:1", BusCommand: bus},
		"no bus command":     {Mode: ModeParked},
		"too many polls":     {Mode: ModeParked, Polls: parked.MaxPolls + 1, BusCommand: bus},
		"negative polls":     {Mode: ModeParked, Polls: -1, BusCommand: bus},
		"wait beyond a poll": {Mode: ModeParked, Duration: parked.PollWait, BusCommand: bus},
	} {
		if err := c.Validate(); !errors.Is(err, ErrConfig) {
			t.Errorf("%s: err = %v, want %v", name, err, ErrConfig)
		}
	}
	c, err := Config{Mode: ModeParked, BusCommand: bus}.withDefaults()
	if err != nil || c.Polls != parked.DefaultPolls {
		t.Errorf("defaults: polls %d, err %v", c.Polls, err)
	}
}
