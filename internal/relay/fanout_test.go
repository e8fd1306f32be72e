package relay

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"
)

func TestPostOutcomes(t *testing.T) {
	bus, _ := startBus(t)
	refuse := startFake(t, reply(http.StatusRequestEntityTooLarge, `{"error":"too large"}`))
	busy := startFake(t, reply(http.StatusServiceUnavailable, `{"error":"later"}`))
	down := closedURL(t)
	payload := []byte(`{"hello":1}`)
	for _, tc := range []struct {
		name     string
		urls     []string
		accepted []string
		refused  bool
	}{
		{"one relay takes it", []string{down, bus, refuse}, []string{bus}, false},
		{"every relay refuses for good", []string{refuse, refuse}, nil, true},
		{"a refusal and an outage are worth a retry", []string{refuse, down}, nil, false},
		{"a 503 is worth a retry", []string{busy}, nil, false},
		{"no relay", nil, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var clients []*Client
			for _, u := range tc.urls {
				clients = append(clients, New(u, nil))
			}
			out := Post(t.Context(), Senders(clients), "k#s", payload)
			if len(out.Accepted) != len(tc.accepted) || (len(tc.accepted) > 0 && out.Accepted[0] != tc.accepted[0]) {
				t.Errorf("accepted %v, want %v", out.Accepted, tc.accepted)
			}
			if out.OK() != (len(tc.accepted) > 0) {
				t.Errorf("OK = %v", out.OK())
			}
			if out.Refused() != tc.refused {
				t.Errorf("Refused = %v, want %v (failures %v)", out.Refused(), tc.refused, out.Failed)
			}
			if len(out.Accepted)+len(out.Failed) != len(tc.urls) {
				t.Errorf("%d answers for %d relays", len(out.Accepted)+len(out.Failed), len(tc.urls))
			}
			for i, f := range out.Failed {
				if f.Err == nil || f.URL == "" {
					t.Errorf("failure %d = %+v", i, f)
				}
			}
		})
	}
}

// slowSender blocks until its context ends.
type slowSender struct{ started chan struct{} }

func (s slowSender) URL() string { return "slow" }
func (s slowSender) Send(ctx context.Context, _ string, _ []byte) error {
	s.started <- struct{}{}
	<-ctx.Done()
	return ctx.Err()
}

func TestPostAsksEveryRelayAtOnceAndStopsWithTheContext(t *testing.T) {
	const n = 3
	started := make(chan struct{}, n)
	relays := make([]Sender, n)
	for i := range relays {
		relays[i] = slowSender{started: started}
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan Outcome, 1)
	go func() { done <- Post(ctx, relays, "k#s", []byte("{}")) }()
	// Every relay is being asked before any has answered.
	for range n {
		select {
		case <-started:
		case <-time.After(10 * time.Second):
			t.Fatal("not every relay was asked while the others were still busy")
		}
	}
	cancel()
	out := <-done
	if out.OK() || len(out.Failed) != n {
		t.Fatalf("outcome %+v", out)
	}
	for _, f := range out.Failed {
		if !errors.Is(f.Err, context.Canceled) {
			t.Errorf("failure %v, want context.Canceled", f.Err)
		}
	}
}
