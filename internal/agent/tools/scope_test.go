package tools

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/interlink-go/interlink/internal/agent/session"
	"github.com/interlink-go/interlink/internal/testutil"
)

// A group's view of the session is nil until the binding has its session,
// then the one view, built once however many calls race for it; a tool
// that needs the session refuses until then, and one that does not gets
// the nil view.
func TestAGroupSeesItsViewOnlyOnceBound(t *testing.T) {
	b := session.NewBinding(session.Config{StateRoot: t.TempDir(), Signer: testutil.Signer(t, 0x5c), Name: "me"})
	var built atomic.Int32
	type view struct{ id string }
	scope := View(b, func(s *session.Session) *view {
		built.Add(1)
		return &view{id: s.ID}
	})
	var seen []*view
	var mu sync.Mutex
	h := func(_ context.Context, v *view, _ none) (string, error) {
		mu.Lock()
		seen = append(seen, v)
		mu.Unlock()
		return "ok", nil
	}
	bound := Bound(mcp.NewTool("bound"), scope, h)
	anytime := Anytime(mcp.NewTool("anytime"), scope, h)
	ctx := context.Background()

	if _, err := bound.call(ctx, mcp.CallToolRequest{}); !errors.Is(err, ErrNotBound) {
		t.Errorf("a bound tool before binding: %v, want ErrNotBound", err)
	}
	if got, err := anytime.call(ctx, mcp.CallToolRequest{}); err != nil || got != "ok" || len(seen) != 1 || seen[0] != nil {
		t.Errorf("an anytime tool before binding = %q, %v with views %v; want it run with no view", got, err, seen)
	}
	if built.Load() != 0 {
		t.Error("a view was built before binding")
	}

	const thread = "0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"
	if _, _, err := b.Bind(thread); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if _, err := bound.call(ctx, mcp.CallToolRequest{}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if _, err := anytime.call(ctx, mcp.CallToolRequest{}); err != nil {
		t.Fatal(err)
	}
	for _, v := range seen[1:] {
		if v == nil || v.id != thread {
			t.Fatalf("a call after binding saw %+v, want the view of %s", v, thread)
		}
	}
	if n := built.Load(); n < 1 {
		t.Errorf("the view was built %d times", n)
	}
	first := seen[1]
	for _, v := range seen[2:] {
		if v != first {
			t.Error("calls after binding saw different views")
		}
	}
}
