package hostile

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/interlink-go/interlink/internal/agent"
	"github.com/interlink-go/interlink/internal/agent/agenttest"
	"github.com/interlink-go/interlink/internal/delivery"
	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/relay"
	"github.com/interlink-go/interlink/internal/route"
	"github.com/interlink-go/interlink/internal/testutil"
)

var seeds atomic.Uint32

// party is one identity with its key file and peers.json.
type party struct {
	signer    *identity.Signer
	keyPath   string
	peersPath string
}

// newParty makes an identity whose peers.json lists nobody.
func newParty(t testing.TB) *party {
	t.Helper()
	id := agenttest.IdentFrom(t, byte(0x80+seeds.Add(1)))
	return &party{signer: id.Signer, keyPath: id.KeyPath, peersPath: id.PeersPath}
}

func (p *party) key() identity.PublicKey { return p.signer.Public() }

// writePeers replaces p's peers.json with the given petnames.
func (p *party) writePeers(t testing.TB, peers map[string]*party) {
	t.Helper()
	m := map[string]map[string]string{}
	for name, q := range peers {
		m[name] = map[string]string{"key": q.key().String()}
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p.peersPath, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// node is a running agent with an in-process MCP client.
type node struct {
	t       testing.TB
	p       *party
	a       *agent.Agent
	c       *client.Client
	root    string
	logs    *testutil.LockedBuffer
	session string

	mu            sync.Mutex
	notifications []mcp.JSONRPCNotification // guarded by mu
}

// nodeOpts changes how start builds a node.
type nodeOpts struct {
	edit func(c *agent.Config, root string)
}

// start runs an agent for p in session on the bus at url, without a host
// sink: notices reach the client only in channel mode.
func start(t testing.TB, p *party, session, url string, o *nodeOpts) *node {
	t.Helper()
	id := &agenttest.Ident{Signer: p.signer, KeyPath: p.keyPath, PeersPath: p.peersPath}
	an := agenttest.Start(t, id, session, []string{url}, &agenttest.Options{NoSink: true, Edit: func(c *agent.Config) {
		if o != nil && o.edit != nil {
			o.edit(c, c.StateRoot)
		}
	}})
	n := &node{t: t, p: p, a: an.A, c: an.C, root: an.Root, logs: an.Logs, session: session}
	an.C.OnNotification(func(x mcp.JSONRPCNotification) {
		n.mu.Lock()
		defer n.mu.Unlock()
		n.notifications = append(n.notifications, x)
	})
	return n
}

// route is the node's own bus route.
func (n *node) route() route.Route { return route.New(n.p.key().String(), n.session) }

// call calls a tool and returns its text; a JSON-RPC error is returned as
// err.
func (n *node) call(name string, args map[string]any) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req := mcp.CallToolRequest{}
	req.Params.Name = name
	req.Params.Arguments = args
	res, err := n.c.CallTool(ctx, req)
	if err != nil {
		return "", err
	}
	if len(res.Content) != 1 {
		n.t.Fatalf("%s: %d content blocks, want 1", name, len(res.Content))
	}
	tc, ok := res.Content[0].(mcp.TextContent)
	if !ok {
		n.t.Fatalf("%s: content is %T, want text", name, res.Content[0])
	}
	if res.IsError {
		return "", fmt.Errorf("tool error: %s", tc.Text)
	}
	return tc.Text, nil
}

// ok calls a tool and fails the test unless it succeeds.
func (n *node) ok(name string, args map[string]any) string {
	n.t.Helper()
	text, err := n.call(name, args)
	if err != nil {
		n.t.Fatalf("%s(%v): %v", name, args, err)
	}
	return text
}

// waitText calls a tool until its text contains want.
func (n *node) waitText(name string, args map[string]any, want string) string {
	n.t.Helper()
	var text string
	eventually(n.t, fmt.Sprintf("%s to show %q", name, want), func() bool {
		text, _ = n.call(name, args)
		return strings.Contains(text, want)
	})
	return text
}

// channel returns the channel notifications the node's client received.
func (n *node) channel() []mcp.JSONRPCNotification {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []mcp.JSONRPCNotification
	for _, x := range n.notifications {
		if x.Method == delivery.ChannelMethod {
			out = append(out, x)
		}
	}
	return out
}

// eventually polls cond until it holds, failing after 20 s.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	testutil.Eventually(t, 20*time.Second, what, cond)
}

// onRoster waits until the bus at url lists key#session.
func onRoster(t testing.TB, url string, key identity.PublicKey, session string) {
	t.Helper()
	eventually(t, "session "+session+" on the roster", func() bool {
		ros := relay.FetchRoster(context.Background(), []*relay.Client{relay.New(url, nil)})
		for _, e := range ros.Entries {
			if e.Key == key && e.Session.SessionID == session {
				return true
			}
		}
		return false
	})
}

// stranger is a key that talks to the bus directly, the way a hostile
// client would, without an agent of its own.
type stranger struct {
	signer  *identity.Signer
	session string
	n       atomic.Uint64
}

func newStranger(s *identity.Signer) *stranger { return &stranger{signer: s, session: "s-1"} }

// sign returns a message of kind from the stranger to target, signed now,
// with reply_to naming the stranger's session; edit runs before signing.
func (s *stranger) sign(t testing.TB, target identity.PublicKey, kind identity.Kind, text string, edit func(*identity.Message)) identity.Message {
	t.Helper()
	m := identity.Message{
		From:    s.signer.Public().String(),
		To:      target.String(),
		Text:    text,
		TS:      identity.Millis(time.Now()),
		MsgID:   fmt.Sprintf("%s-%08d", s.signer.Public().Fingerprint(), s.n.Add(1)),
		Kind:    kind,
		ReplyTo: route.New(s.signer.Public().String(), s.session).String(),
	}
	if edit != nil {
		edit(&m)
	}
	if err := s.signer.SignMessage(&m); err != nil {
		t.Fatal(err)
	}
	return m
}

// post sends m to route rt on the bus at url.
func post(t testing.TB, url string, rt route.Route, m identity.Message) {
	t.Helper()
	p, err := m.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if err := relay.New(url, nil).Send(context.Background(), rt.String(), p); err != nil {
		t.Fatal(err)
	}
}

// drained waits until the bus at url holds nothing for rt: the agent has
// handled and acknowledged everything posted there.
func drained(t testing.TB, url string, rt route.Route) {
	t.Helper()
	eventually(t, "the queue of "+rt.Session+" to drain", func() bool {
		d, err := relay.New(url, nil).Recv(context.Background(), rt.String(), 0)
		return err == nil && !d.HasMessage
	})
}

// tagRE matches any spelling of interlink's block tags that a reader could
// take for one: a "<", optional white space and invisible characters, an
// optional "/", and the tag name in any case.
var tagRE = regexp.MustCompile(`(?i)<[\s\p{Cf}]*/?[\s\p{Cf}]*i\p{Cf}*n\p{Cf}*t\p{Cf}*e\p{Cf}*r\p{Cf}*l\p{Cf}*i\p{Cf}*n\p{Cf}*k`)

// checkInert fails unless text, something a host model is shown, holds no
// control character but line feed and tab, no bidirectional control or
// Unicode separator, and at most maxTags spellings of interlink's tags.
func checkInert(t testing.TB, where, text string, maxTags int) {
	t.Helper()
	for _, r := range text {
		if (unicode.Is(unicode.Cc, r) && r != '\n' && r != '\t') || unicode.Is(unicode.Bidi_Control, r) ||
			r == '\u2028' || r == '\u2029' {
			t.Errorf("%s holds %U:\n%q", where, r, text)
			return
		}
	}
	if n := len(tagRE.FindAllString(text, -1)); n > maxTags {
		t.Errorf("%s holds %d tag spellings, want at most %d:\n%s", where, n, maxTags, text)
	}
}

// sessionInfo returns a session descriptor with id sid.
func sessionInfo(sid string) identity.SessionInfo {
	return identity.SessionInfo{SessionID: sid, Cwd: "/src/" + sid}
}

// identityInfo returns a session descriptor with every field given.
func identityInfo(sid, cwd, git, summary string) identity.SessionInfo {
	return identity.SessionInfo{SessionID: sid, Cwd: cwd, GitRoot: git, Summary: summary}
}
