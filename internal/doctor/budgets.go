package doctor

import (
	"fmt"
	"strings"
	"time"

	"github.com/interlink-go/interlink/internal/budget"
	"github.com/interlink-go/interlink/internal/identity"
)

// budgets reports the peers whose wake-ups are paused.
func (r *report) budgets(cfg Config, own identity.PublicKey) {
	const id, name = "budgets", "wake-up budget"
	if cfg.Session == "" {
		return
	}
	b, err := budget.Open(cfg.StateRoot, own, cfg.Session, &budget.Options{Wake: cfg.Wake, Send: cfg.Send, Now: cfg.Now})
	if err != nil {
		r.add(id, name, Fail, oneLine(err.Error()), "")
		return
	}
	st, err := b.Status()
	if err != nil {
		r.add(id, name, Warn, "the budget file cannot be read: "+oneLine(err.Error()), "move it aside; the server starts counting again")
		return
	}
	var paused []string
	for _, s := range st {
		if s.Paused {
			paused = append(paused, fmt.Sprintf("%s (since %s)", s.Peer.Name, s.PausedSince.Format(time.TimeOnly)))
		}
	}
	if len(paused) > 0 {
		r.add(id, name, Warn, fmt.Sprintf("wake-ups are paused for %s: %d automatic wake-ups within %s",
			strings.Join(paused, ", "), cfg.Wake.N, cfg.Wake.Per),
			"the operator's next prompt in the session resumes them, or: interlink-mcp turn --session "+cfg.Session)
		return
	}
	r.add(id, name, OK, fmt.Sprintf("no peer is paused (wake-ups %s, sends %s)", cfg.Wake, cfg.Send), "")
}
