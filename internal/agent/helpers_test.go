package agent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/interlink-go/interlink/internal/agent"
	"github.com/interlink-go/interlink/internal/bus/bustest"
	"github.com/interlink-go/interlink/internal/delivery"
	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/mailbox"
	"github.com/interlink-go/interlink/internal/relay"
	"github.com/interlink-go/interlink/internal/testutil"
)

// fastTiming makes the workers quick enough for tests.
func fastTiming() agent.Timing {
	return agent.Timing{
		Announce:   200 * time.Millisecond,
		Retry:      50 * time.Millisecond,
		PollWait:   300 * time.Millisecond,
		RetryDelay: 30 * time.Millisecond,
		Notify:     20 * time.Millisecond,
		LockRetry:  20 * time.Millisecond,
	}
}

// ident is one identity: its key file and peers.json in a folder of its own.
type ident struct {
	signer    *identity.Signer
	dir       string
	keyPath   string
	peersPath string
}

var seedCount atomic.Uint32

// newIdent creates an identity with an empty peers.json.
func newIdent(t testing.TB) *ident {
	t.Helper()
	return newIdentFrom(t, byte(seedCount.Add(1)))
}

// newIdentFrom creates the identity whose seed is [identity.SeedSize]
// copies of b, with an empty peers.json: the same key in every run.
func newIdentFrom(t testing.TB, b byte) *ident {
	t.Helper()
	seed := bytes.Repeat([]byte{b}, identity.SeedSize)
	s, err := identity.NewSigner(seed)
	if err != nil {
		t.Fatal(err)
	}
	id := &ident{signer: s, dir: t.TempDir()}
	id.keyPath = filepath.Join(id.dir, "id.key")
	id.peersPath = filepath.Join(id.dir, "peers.json")
	if err := os.WriteFile(id.keyPath, identity.EncodeKeyFile(seed), 0o600); err != nil {
		t.Fatal(err)
	}
	writeFile(t, id.peersPath, "{}")
	return id
}

func (id *ident) key() string { return id.signer.Public().String() }

// admit lists the others in id's peers.json under the given petnames.
func (id *ident) admit(t testing.TB, pairs ...any) {
	t.Helper()
	m := map[string]map[string]string{}
	for i := 0; i < len(pairs); i += 2 {
		m[pairs[i].(string)] = map[string]string{"key": pairs[i+1].(*ident).key()}
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, id.peersPath, string(b))
}

func writeFile(t testing.TB, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

// node is a running agent with an in-process MCP client.
type node struct {
	t     testing.TB
	id    *ident
	a     *agent.Agent
	c     *client.Client
	sink  *delivery.Memory
	root  string
	logs  *testutil.LockedBuffer
	init  *mcp.InitializeResult
	drops *dropLog
}

type dropLog struct {
	mu      sync.Mutex
	reasons []string
}

func (d *dropLog) add(m *identity.Message, reason string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.reasons = append(d.reasons, reason+":"+m.MsgID)
}

func (d *dropLog) list() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.reasons...)
}

// nodeOpts changes how start builds a node.
type nodeOpts struct {
	root   string // state root; empty means a new temporary one
	noSink bool
	edit   func(*agent.Config)
	// beforeStart runs between agent.New and Start.
	beforeStart func(a *agent.Agent, root string)
	// ctx is the context Start gets; nil means one that never ends.
	ctx context.Context
}

// start runs an agent for id in session on the relays urls.
func start(t testing.TB, id *ident, session string, urls []string, o *nodeOpts) *node {
	t.Helper()
	if o == nil {
		o = &nodeOpts{}
	}
	n := &node{t: t, id: id, root: o.root, logs: &testutil.LockedBuffer{}, drops: &dropLog{}}
	if n.root == "" {
		n.root = t.TempDir()
	}
	cfg := agent.Config{
		KeyPath:   id.keyPath,
		PeersPath: id.peersPath,
		URLs:      urls,
		Session:   session,
		StateRoot: n.root,
		Cwd:       "/work/" + session,
		Logger:    slog.New(slog.NewTextHandler(n.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Dropped:   n.drops.add,
		Timing:    fastTiming(),
	}
	if !o.noSink {
		n.sink = &delivery.Memory{}
		cfg.Sink = n.sink
	}
	if o.edit != nil {
		o.edit(&cfg)
	}
	a, err := agent.New(cfg)
	if err != nil {
		t.Fatalf("agent.New: %v", err)
	}
	n.a = a
	if o.beforeStart != nil {
		o.beforeStart(a, n.root)
	}
	startCtx := o.ctx
	if startCtx == nil {
		startCtx = context.Background()
	}
	if err := a.Start(startCtx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.stop)
	c, err := client.NewInProcessClient(a.MCP())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	req := mcp.InitializeRequest{}
	req.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	req.Params.ClientInfo = mcp.Implementation{Name: "test", Version: "1"}
	if n.init, err = c.Initialize(ctx, req); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	n.c = c
	return n
}

func (n *node) stop() {
	if n.c != nil {
		_ = n.c.Close()
	}
	n.a.Stop()
}

// call calls a tool and returns its text and isError; a JSON-RPC error
// fails the test.
func (n *node) call(name string, args map[string]any) (string, bool) {
	n.t.Helper()
	text, isErr, err := n.try(name, args)
	if err != nil {
		n.t.Fatalf("%s(%v): JSON-RPC error: %v", name, args, err)
	}
	return text, isErr
}

// ok calls a tool and fails the test unless it succeeds.
func (n *node) ok(name string, args map[string]any) string {
	n.t.Helper()
	text, isErr := n.call(name, args)
	if isErr {
		n.t.Fatalf("%s(%v): tool error: %s", name, args, text)
	}
	return text
}

// rpcErr calls a tool and fails the test unless it answers with a JSON-RPC
// error, whose message it returns.
func (n *node) rpcErr(name string, args map[string]any) string {
	n.t.Helper()
	text, _, err := n.try(name, args)
	if err == nil {
		n.t.Fatalf("%s(%v) = %q, want a JSON-RPC error", name, args, text)
	}
	return err.Error()
}

func (n *node) try(name string, args map[string]any) (string, bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req := mcp.CallToolRequest{}
	req.Params.Name = name
	req.Params.Arguments = args
	res, err := n.c.CallTool(ctx, req)
	if err != nil {
		return "", false, err
	}
	if len(res.Content) != 1 {
		n.t.Fatalf("%s: %d content blocks, want 1", name, len(res.Content))
	}
	tc, ok := res.Content[0].(mcp.TextContent)
	if !ok {
		n.t.Fatalf("%s: content is %T, want text", name, res.Content[0])
	}
	return tc.Text, res.IsError, nil
}

// records returns the node's mailbox records, read from the file.
func (n *node) records() []mailbox.Record {
	n.t.Helper()
	mb, err := mailbox.Open(n.root, n.id.signer.Public(), n.a.Session(), nil)
	if err != nil {
		n.t.Fatal(err)
	}
	recs, err := mb.Records()
	if err != nil {
		n.t.Fatal(err)
	}
	return recs
}

// known returns how many messages n's mailbox knows: unread records and
// tombstones of consumed or superseded ones.
func (n *node) known() int {
	n.t.Helper()
	mb, err := mailbox.Open(n.root, n.id.signer.Public(), n.a.Session(), nil)
	if err != nil {
		n.t.Fatal(err)
	}
	tombs, err := mb.Tombstones()
	if err != nil {
		n.t.Fatal(err)
	}
	return len(n.records()) + len(tombs)
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

// waitSticky waits until n's replies to peer go to session: the reply
// session is remembered just after the mailbox commit that makes a message
// readable.
func (n *node) waitSticky(peer *ident, session string) {
	n.t.Helper()
	eventually(n.t, fmt.Sprintf("replies to %s going to %s", peer.signer.Public().Fingerprint(), session), func() bool {
		got, ok := agent.StickySession(n.a, peer.signer.Public())
		return ok && got == session
	})
}

// eventually polls cond until it holds, failing after 15 s.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	testutil.Eventually(t, 15*time.Second, what, cond)
}

// onRoster waits until the relay at url lists key#session.
func onRoster(t testing.TB, url, key, session string) {
	t.Helper()
	eventually(t, "session "+session+" on the roster of "+url, func() bool {
		return rosterHas(t, url, key, session)
	})
}

func rosterHas(t testing.TB, url, key, session string) bool {
	ros := relay.FetchRoster(context.Background(), []*relay.Client{relay.New(url, nil)})
	for _, e := range ros.Entries {
		if e.Key.String() == key && e.Session.SessionID == session {
			return true
		}
	}
	return false
}

// switchable wraps a bus so that it can answer 503 to everything, or to one
// endpoint, or refuse one endpoint with 400, and counts requests per path.
type switchable struct {
	mu     sync.Mutex
	down   map[string]bool // path → failing; "" means every path
	refuse map[string]bool // path → answered with 400
	counts map[string]int
}

func newSwitchable() *switchable {
	return &switchable{down: map[string]bool{}, refuse: map[string]bool{}, counts: map[string]int{}}
}

func (s *switchable) set(path string, down bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.down[path] = down
}

// setRefused makes the bus answer requests for path with 400, or stop.
func (s *switchable) setRefused(path string, refused bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refuse[path] = refused
}

func (s *switchable) count(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts[path]
}

func (s *switchable) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.counts[r.URL.Path]++
		down := s.down[""] || s.down[r.URL.Path]
		refused := s.refuse[r.URL.Path]
		s.mu.Unlock()
		switch {
		case down:
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(`{"error":"down for the test"}`))
			return
		case refused:
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"error":"refused for the test"}`))
			return
		}
		h.ServeHTTP(w, r)
	})
}

// startBus starts an in-memory bus on loopback.
func startBus(t testing.TB) string { return bustest.Start(t, nil) }

// startSwitchableBus starts a bus whose endpoints can be made to fail.
func startSwitchableBus(t testing.TB) (string, *switchable) {
	s := newSwitchable()
	return bustest.Start(t, &bustest.Options{Wrap: s.wrap}), s
}

// msgID extracts the msg_id from a send_message result.
func msgID(t testing.TB, result string) string {
	t.Helper()
	_, rest, ok := strings.Cut(result, "(msg_id ")
	if !ok {
		t.Fatalf("no msg_id in %q", result)
	}
	id, _, _ := strings.Cut(rest, ")")
	return id
}

// pair makes two identities peers of each other: a calls b "bob", b calls a
// "alice".
func pair(t testing.TB) (alice, bob *ident) {
	alice, bob = newIdent(t), newIdent(t)
	alice.admit(t, "bob", bob)
	bob.admit(t, "alice", alice)
	return alice, bob
}
