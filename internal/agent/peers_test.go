package agent_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"
)

// Item 43 (peer tools) and the shared peer list: sibling sessions of one
// identity see each other's changes at once, and concurrent additions are
// all kept.
func TestPeerToolsAcrossSiblings(t *testing.T) {
	url := startBus(t)
	me, carol := newIdent(t), newIdent(t)
	root := t.TempDir()
	s1 := start(t, me, "s1", []string{url}, &nodeOpts{root: root})
	s2 := start(t, me, "s2", []string{url}, &nodeOpts{root: root})

	if got := s1.ok("list_peers", nil); got != "no peers authorized" {
		t.Errorf("empty list = %q", got)
	}
	if got := s1.ok("add_peer", map[string]any{"petname": "carol", "key": carol.key()}); !strings.Contains(got, "carol") || !strings.Contains(got, "authorized") {
		t.Errorf("add_peer = %q", got)
	}
	if got := s2.ok("list_peers", nil); got != "carol → "+carol.key() {
		t.Errorf("sibling's list = %q", got)
	}
	// Adding the same pair again changes nothing and succeeds.
	s2.ok("add_peer", map[string]any{"petname": "carol", "key": carol.key()})

	// carol's messages reach s2; after s1 removes her, the next one is
	// dropped by s2 without a restart.
	sendAs(t, url, carol, carol.key()+"#c1", s2, "before removal")
	s2.waitText("receive_messages", nil, "before removal")
	if got := s1.ok("remove_peer", map[string]any{"petname": "carol"}); !strings.Contains(got, "revoked carol") {
		t.Errorf("remove_peer = %q", got)
	}
	m := sendAs(t, url, carol, carol.key()+"#c1", s2, "after removal")
	eventually(t, "the message after removal dropped", func() bool {
		return strings.Contains(strings.Join(s2.drops.list(), " "), "not_allowlisted:"+m.MsgID)
	})
	if got := s2.ok("remove_peer", map[string]any{"petname": "carol"}); !strings.Contains(got, "no peer named") {
		t.Errorf("second remove_peer = %q", got)
	}

	// Concurrent additions from both sessions are all kept.
	const n = 10
	ids := make([]*ident, 2*n)
	for i := range ids {
		ids[i] = newIdent(t)
	}
	var wg sync.WaitGroup
	for s, node := range []*node{s1, s2} {
		wg.Go(func() {
			for i := range n {
				k := s*n + i
				if _, isErr, err := node.try("add_peer", map[string]any{"petname": fmt.Sprint("p", k), "key": ids[k].key()}); err != nil || isErr {
					t.Errorf("add_peer p%d: %v", k, err)
				}
			}
		})
	}
	wg.Wait()
	list := s1.ok("list_peers", nil)
	for k := range ids {
		if !strings.Contains(list, fmt.Sprintf("p%d → %s", k, ids[k].key())) {
			t.Errorf("p%d missing after concurrent adds", k)
		}
	}
}

func TestAddPeerErrors(t *testing.T) {
	url := startBus(t)
	me, carol, dave := newIdent(t), newIdent(t), newIdent(t)
	me.admit(t, "carol", carol)
	n := start(t, me, "s1", []string{url}, nil)
	smallOrder := "AQAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA" // the identity point
	tests := []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"petname": "x", "key": "not-a-key"}, "updating peers: invalid key"},
		{map[string]any{"petname": "x", "key": smallOrder}, "updating peers:"},
		{map[string]any{"petname": "self", "key": dave.key()}, "updating peers:"},
		{map[string]any{"petname": "Interlink", "key": dave.key()}, "updating peers:"},
		{map[string]any{"petname": "carol", "key": dave.key()}, "updating peers:"},
		{map[string]any{"petname": "carol2", "key": carol.key()}, "updating peers:"},
		{map[string]any{"petname": "x"}, "key is required"},
	}
	for _, tt := range tests {
		if got := n.rpcErr("add_peer", tt.args); !strings.Contains(got, tt.want) {
			t.Errorf("add_peer(%v) = %q, want %q", tt.args, got, tt.want)
		}
	}
	if got := n.ok("list_peers", nil); got != "carol → "+carol.key() {
		t.Errorf("peers changed by refused adds: %q", got)
	}
}
