package agent_test

import (
	"slices"
	"testing"
	"time"

	"github.com/interlink-go/interlink/internal/agent"
	"github.com/interlink-go/interlink/internal/agent/agenttest"
	"github.com/interlink-go/interlink/internal/e2e"
	"github.com/interlink-go/interlink/internal/identity"
)

// BenchmarkReceiptStages measures how long after each event at the
// receiver its sender's message_status shows the stage, for one message
// at a time between two agents on an in-memory bus on loopback:
//
//   - stored: from bob's commit of the message to alice seeing
//     receiver_stored;
//   - surfaced: from the return of bob's receive_messages, which hands
//     the message to his model, to receiver_surfaced;
//   - acknowledged: from the return of bob's acknowledge_messages to
//     receiver_acknowledged.
//
// Alice asks message_status every 2 ms, so each figure may be up to 2 ms
// late. The floor is the message's own way, from send_message to the
// commit in bob's mailbox, in the same run. A receipt waits up to 200 ms
// for others to share it (see package e2e), which most of each figure
// is.
func BenchmarkReceiptStages(b *testing.B) {
	alice, bob := agenttest.Pair(b)
	url := unlimitedBus(b)
	a := agenttest.Start(b, alice, "a1", []string{url}, &agenttest.Options{NoSink: true})
	committed := make(chan string, 1)
	bn := agenttest.Start(b, bob, "b1", []string{url}, &agenttest.Options{NoSink: true, Edit: func(c *agent.Config) {
		c.Delivered = func(m *identity.Message, _ string) { committed <- m.MsgID }
	}})
	agenttest.OnRoster(b, url, alice.Key(), "a1")
	agenttest.OnRoster(b, url, bob.Key(), "b1")

	// until asks alice's status of id every 2 ms until it shows stage
	// and returns how long that took from since.
	until := func(id string, stage e2e.Stage, since time.Time) time.Duration {
		deadline := time.Now().Add(10 * time.Second)
		for {
			got, _ := e2e.ParseStage(stageOf(a, id))
			if got == stage {
				return time.Since(since)
			}
			if got > stage {
				b.Fatalf("stage %s of %s came before %s", got, id, stage)
			}
			if time.Now().After(deadline) {
				b.Fatalf("no %s of %s within 10 s", stage, id)
			}
			time.Sleep(2 * time.Millisecond)
		}
	}
	var floor, stored, surfaced, acked []time.Duration
	for b.Loop() {
		t0 := time.Now()
		id := agenttest.MsgID(b, a.OK("send_message", map[string]any{"to": "bob", "text": "how far did this get"}))
		select {
		case got := <-committed:
			if got != id {
				b.Fatalf("bob committed %s, alice sent %s", got, id)
			}
		case <-time.After(10 * time.Second):
			b.Fatal("message not committed within 10 s")
		}
		tc := time.Now()
		floor = append(floor, tc.Sub(t0))
		stored = append(stored, until(id, e2e.Stored, tc))

		bn.OK("receive_messages", nil)
		surfaced = append(surfaced, until(id, e2e.Surfaced, time.Now()))

		bn.OK("acknowledge_messages", map[string]any{"messages": []map[string]any{{"sender": alice.Key(), "msg_id": id}}})
		acked = append(acked, until(id, e2e.Acknowledged, time.Now()))
	}
	b.StopTimer()
	for _, m := range []struct {
		name string
		d    []time.Duration
	}{{"floor-send", floor}, {"stored", stored}, {"surfaced", surfaced}, {"acknowledged", acked}} {
		slices.Sort(m.d)
		b.ReportMetric(float64(m.d[len(m.d)/2].Microseconds())/1000, m.name+"-p50-ms")
		b.ReportMetric(float64(m.d[len(m.d)-1].Microseconds())/1000, m.name+"-max-ms")
	}
}
