package statuspage

import (
	"sync/atomic"
	"time"
)

// Rates over the last minutes, for the chart.
const (
	rateStep  = 10 * time.Second
	rateSteps = 60 // ten minutes
)

// rates counts stored and delivered messages per [rateStep] over the last
// [rateSteps] steps, in a ring indexed by step number. Each slot holds the
// step it counts for; a slot left from an earlier lap is reset by the
// first event of its new step. Updates are atomic; a reader may see a slot
// being reset, which only moves an event or two between neighbouring steps.
type rates struct {
	slots [rateSteps]rateSlot
}

type rateSlot struct {
	step      atomic.Int64
	stored    atomic.Int64
	delivered atomic.Int64
}

// slot returns the slot of the step holding ms, reset if it last counted
// another step.
func (r *rates) slot(ms int64) *rateSlot {
	step := ms / rateStep.Milliseconds()
	sl := &r.slots[step%rateSteps]
	if old := sl.step.Load(); old != step && sl.step.CompareAndSwap(old, step) {
		sl.stored.Store(0)
		sl.delivered.Store(0)
	}
	return sl
}

func (r *rates) addStored(ms int64)    { r.slot(ms).stored.Add(1) }
func (r *rates) addDelivered(ms int64) { r.slot(ms).delivered.Add(1) }

// ratePoint is one step of [rates.series].
type ratePoint struct {
	Start             time.Time
	Stored, Delivered int64
}

// series returns the counts of the [rateSteps] steps up to and including
// the one holding now, oldest first; steps without events count 0.
func (r *rates) series(now int64) []ratePoint {
	last := now / rateStep.Milliseconds()
	out := make([]ratePoint, rateSteps)
	for i := range out {
		step := last - int64(rateSteps-1-i)
		out[i].Start = time.UnixMilli(step * rateStep.Milliseconds())
		if step < 0 {
			continue
		}
		sl := &r.slots[step%rateSteps]
		if sl.step.Load() == step {
			out[i].Stored, out[i].Delivered = sl.stored.Load(), sl.delivered.Load()
		}
	}
	return out
}
