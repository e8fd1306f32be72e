package agent_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/interlink-go/interlink/internal/agent"
	"github.com/interlink-go/interlink/internal/agent/agenttest"
	"github.com/interlink-go/interlink/internal/inbound"
)

// An idle agent with the default timing asks its relay for at most three
// things a minute besides its parked poll: its announcements (one every
// 30 s) and nothing else. Counted over an hour of the bubble's clock.
func TestIdleAgentMakesAtMostThreeRequestsAMinuteBesidesItsPoll(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		url, sw := agenttest.StartMemBus(t, nil)
		alice := agenttest.NewIdent(t)
		agenttest.Start(t, alice, "a1", []string{url}, &agenttest.Options{Edit: func(c *agent.Config) {
			c.Timing = agent.Timing{HTTPClient: c.Timing.HTTPClient} // the defaults
		}})
		synctest.Wait()
		before := sw.Counts()
		const window = time.Hour
		agenttest.Elapse(window)
		after := sw.Counts()
		others, polls := 0, after["/recv"]-before["/recv"]
		for path, n := range after {
			if path != "/recv" {
				others += n - before[path]
			}
		}
		perMinute := float64(others) / window.Minutes()
		t.Logf("in %v: %d long-polls, %d other requests (%.2f a minute): %v", window, polls, others, perMinute, after)
		if perMinute > 3 {
			t.Errorf("an idle agent made %.2f requests a minute besides its polls; want at most 3", perMinute)
		}
		if polls == 0 || polls > int(window/inbound.DefaultPollWait)+1 {
			t.Errorf("%d long-polls in %v", polls, window)
		}
	})
}
