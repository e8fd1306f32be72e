package relay

import (
	"context"
	"errors"
	"sync"
)

// PostTimeout bounds one post to one relay in [Post]. The relays are posted
// to at once, so it also bounds a whole call.
const PostTimeout = sendTimeout

// Sender posts payloads to one relay. [*Client] implements it.
type Sender interface {
	// URL names the relay in logs and in [Outcome].
	URL() string
	// Send posts payload to the queue of route. A nil error means the relay
	// accepted it.
	Send(ctx context.Context, route string, payload []byte) error
}

// Senders returns clients as a list of [Sender].
func Senders(clients []*Client) []Sender {
	out := make([]Sender, len(clients))
	for i, c := range clients {
		out[i] = c
	}
	return out
}

// Failure is one relay's refusal or failure in an [Outcome].
type Failure struct {
	URL string
	Err error
}

// Outcome is what one [Post] learned from each relay. Both lists keep the
// order of the relays given to Post.
type Outcome struct {
	// Accepted holds the URLs of the relays that took the payload.
	Accepted []string
	// Failed holds the relays that did not, with their errors.
	Failed []Failure
}

// OK reports whether at least one relay took the payload.
func (o Outcome) OK() bool { return len(o.Accepted) > 0 }

// Refused reports whether every relay refused the payload for good: each
// answered with a status that [StatusError.Permanent] calls permanent. With
// no relay at all nothing refused, and it reports false.
func (o Outcome) Refused() bool {
	if len(o.Accepted) > 0 || len(o.Failed) == 0 {
		return false
	}
	for _, f := range o.Failed {
		var se *StatusError
		if !errors.As(f.Err, &se) || !se.Permanent() {
			return false
		}
	}
	return true
}

// Post offers payload for route to every relay at once, each post bounded
// by [PostTimeout] and by ctx, and returns when every relay has answered.
// It is the one way the agent hands a message to its relays: the outbox
// (pairing messages included) and the goodbyes go through it, so they share its
// timeout and its reading of the answers.
func Post(ctx context.Context, relays []Sender, route string, payload []byte) Outcome {
	errs := make([]error, len(relays))
	var wg sync.WaitGroup
	for i, s := range relays {
		wg.Go(func() {
			sctx, cancel := context.WithTimeout(ctx, PostTimeout)
			defer cancel()
			errs[i] = s.Send(sctx, route, payload)
		})
	}
	wg.Wait()
	var out Outcome
	for i, s := range relays {
		if errs[i] == nil {
			out.Accepted = append(out.Accepted, s.URL())
		} else {
			out.Failed = append(out.Failed, Failure{URL: s.URL(), Err: errs[i]})
		}
	}
	return out
}
