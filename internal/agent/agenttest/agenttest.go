// Package agenttest runs real interlink agents for the tests of the agent
// and of what is built on it: identities with their key and peers files, an
// agent per session with an in-process MCP client, buses on loopback that
// can be made to fail, and the waits those tests need.
//
// Only test files import it; no binary links it.
package agenttest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/interlink-go/interlink/internal/agent"
	"github.com/interlink-go/interlink/internal/delivery"
	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/mailbox"
	"github.com/interlink-go/interlink/internal/testutil"
)

// Timing makes the workers quick enough for tests.
func Timing() agent.Timing {
	return agent.Timing{
		Announce:   200 * time.Millisecond,
		Retry:      50 * time.Millisecond,
		PollWait:   300 * time.Millisecond,
		RetryDelay: 30 * time.Millisecond,
		Notify:     20 * time.Millisecond,
		LockRetry:  20 * time.Millisecond,
	}
}

// Ident is one identity: its key file and peers.json in a folder of its
// own.
type Ident struct {
	Signer    *identity.Signer
	Dir       string
	KeyPath   string
	PeersPath string
}

var seedCount atomic.Uint32

// NewIdent creates an identity with an empty peers.json and a key no other
// NewIdent of this test binary gives.
func NewIdent(tb testing.TB) *Ident {
	tb.Helper()
	return IdentFrom(tb, byte(seedCount.Add(1)))
}

// IdentFrom creates the identity whose seed is [identity.SeedSize] copies
// of b, with an empty peers.json: the same key in every run.
func IdentFrom(tb testing.TB, b byte) *Ident {
	tb.Helper()
	seed := bytes.Repeat([]byte{b}, identity.SeedSize)
	s, err := identity.NewSigner(seed)
	if err != nil {
		tb.Fatal(err)
	}
	id := &Ident{Signer: s, Dir: tb.TempDir()}
	id.KeyPath = filepath.Join(id.Dir, "id.key")
	id.PeersPath = filepath.Join(id.Dir, "peers.json")
	if err := os.WriteFile(id.KeyPath, identity.EncodeKeyFile(seed), 0o600); err != nil {
		tb.Fatal(err)
	}
	WriteFile(tb, id.PeersPath, "{}")
	return id
}

// Key returns the identity's key as text.
func (id *Ident) Key() string { return id.Signer.Public().String() }

// Fingerprint returns the identity's fingerprint.
func (id *Ident) Fingerprint() string { return id.Signer.Public().Fingerprint() }

// Admit lists others in id's peers.json, given as petname, *Ident pairs.
func (id *Ident) Admit(tb testing.TB, pairs ...any) {
	tb.Helper()
	m := map[string]map[string]string{}
	for i := 0; i < len(pairs); i += 2 {
		m[pairs[i].(string)] = map[string]string{"key": pairs[i+1].(*Ident).Key()}
	}
	b, err := json.Marshal(m)
	if err != nil {
		tb.Fatal(err)
	}
	WriteFile(tb, id.PeersPath, string(b))
}

// Pair makes two identities peers of each other: alice calls the other
// "bob", bob calls her "alice".
func Pair(tb testing.TB) (alice, bob *Ident) {
	alice, bob = NewIdent(tb), NewIdent(tb)
	alice.Admit(tb, "bob", bob)
	bob.Admit(tb, "alice", alice)
	return alice, bob
}

// WriteFile writes data to path, mode 0600.
func WriteFile(tb testing.TB, path, data string) {
	tb.Helper()
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		tb.Fatal(err)
	}
}

// Node is a running agent with an in-process MCP client.
type Node struct {
	TB    testing.TB
	ID    *Ident
	A     *agent.Agent
	C     *client.Client
	Sink  *delivery.Memory // nil with Options.NoSink
	Root  string
	Logs  *testutil.LockedBuffer
	Init  *mcp.InitializeResult
	drops events // "<reason>:<msg_id>" of every message the gate rejected
	added events // msg_id of every message newly committed
}

// events is a list that grows while tests read it.
type events struct {
	mu   sync.Mutex
	list []string // guarded by mu
}

func (e *events) add(s string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.list = append(e.list, s)
}

func (e *events) has(s string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Contains(e.list, s)
}

func (e *events) snapshot() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.list)
}

// Options changes how [Start] builds a node. The zero value means defaults.
type Options struct {
	// Root is the state root; empty means a new temporary one.
	Root string
	// NoSink leaves Config.Sink nil instead of a [delivery.Memory].
	NoSink bool
	// Edit changes the configuration before agent.New.
	Edit func(*agent.Config)
	// Ctx is the context Start gets; nil means one that never ends.
	Ctx context.Context
}

// Start runs an agent for id in session on the relays urls, with an
// initialized in-process client. The test's cleanup stops it.
func Start(tb testing.TB, id *Ident, session string, urls []string, o *Options) *Node {
	tb.Helper()
	if o == nil {
		o = &Options{}
	}
	n := &Node{TB: tb, ID: id, Root: o.Root, Logs: &testutil.LockedBuffer{}}
	if n.Root == "" {
		n.Root = tb.TempDir()
	}
	cfg := agent.Config{
		KeyPath:   id.KeyPath,
		PeersPath: id.PeersPath,
		URLs:      urls,
		Session:   session,
		StateRoot: n.Root,
		Cwd:       "/work/" + session,
		Logger:    slog.New(slog.NewTextHandler(n.Logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Dropped:   func(m *identity.Message, reason string) { n.drops.add(reason + ":" + m.MsgID) },
		Delivered: func(m *identity.Message, _ string) { n.added.add(m.MsgID) },
		Timing:    Timing(),
	}
	cfg.Timing.HTTPClient = httpClient(urls...)
	if !o.NoSink {
		n.Sink = &delivery.Memory{}
		cfg.Sink = n.Sink
	}
	if o.Edit != nil {
		o.Edit(&cfg)
	}
	a, err := agent.New(cfg)
	if err != nil {
		tb.Fatalf("agent.New: %v", err)
	}
	n.A = a
	ctx := o.Ctx
	if ctx == nil {
		ctx = context.Background()
	}
	if err := a.Start(ctx); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(n.Stop)
	n.C = a.Client()
	if err := n.C.Start(context.Background()); err != nil {
		tb.Fatal(err)
	}
	req := mcp.InitializeRequest{}
	req.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	req.Params.ClientInfo = mcp.Implementation{Name: "test", Version: "1"}
	if n.Init, err = n.C.Initialize(context.Background(), req); err != nil {
		tb.Fatalf("initialize: %v", err)
	}
	return n
}

// Stop closes the client and stops the agent. It may be called again.
func (n *Node) Stop() {
	if n.C != nil {
		_ = n.C.Close()
	}
	n.A.Stop()
}

// Call calls a tool and returns its text and isError; a JSON-RPC error
// fails the test.
func (n *Node) Call(name string, args map[string]any) (string, bool) {
	n.TB.Helper()
	text, isErr, err := n.Try(name, args)
	if err != nil {
		n.TB.Fatalf("%s(%v): JSON-RPC error: %v", name, args, err)
	}
	return text, isErr
}

// OK calls a tool and fails the test unless it succeeds.
func (n *Node) OK(name string, args map[string]any) string {
	n.TB.Helper()
	text, isErr := n.Call(name, args)
	if isErr {
		n.TB.Fatalf("%s(%v): tool error: %s", name, args, text)
	}
	return text
}

// RPCErr calls a tool and fails the test unless it answers with a JSON-RPC
// error of code -32603, which mcp-go gives every error of a handler; it
// returns the error's message.
func (n *Node) RPCErr(name string, args map[string]any) string {
	n.TB.Helper()
	return n.rpcErr(name, args, mcp.ErrInternalError)
}

// SchemaErr calls a tool and fails the test unless it answers with the
// JSON-RPC error -32602, the answer to arguments the tool's schema refuses;
// it returns the error's message.
func (n *Node) SchemaErr(name string, args map[string]any) string {
	n.TB.Helper()
	return n.rpcErr(name, args, mcp.ErrInvalidParams)
}

func (n *Node) rpcErr(name string, args map[string]any, code error) string {
	n.TB.Helper()
	text, _, err := n.Try(name, args)
	switch {
	case err == nil:
		n.TB.Fatalf("%s(%v) = %q, want a JSON-RPC error", name, args, text)
	case !errors.Is(err, code):
		n.TB.Errorf("%s(%v): JSON-RPC error %q, want one matching %v", name, args, err, code)
	}
	return err.Error()
}

// Try calls a tool and returns its text and isError, or the JSON-RPC error.
func (n *Node) Try(name string, args map[string]any) (string, bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req := mcp.CallToolRequest{}
	req.Params.Name = name
	req.Params.Arguments = args
	res, err := n.C.CallTool(ctx, req)
	if err != nil {
		return "", false, err
	}
	if len(res.Content) != 1 {
		n.TB.Fatalf("%s: %d content blocks, want 1", name, len(res.Content))
	}
	tc, ok := res.Content[0].(mcp.TextContent)
	if !ok {
		n.TB.Fatalf("%s: content is %T, want text", name, res.Content[0])
	}
	return tc.Text, res.IsError, nil
}

// Mailbox opens the node's mailbox as another process of the session
// would.
func (n *Node) Mailbox() *mailbox.Mailbox {
	n.TB.Helper()
	mb, err := mailbox.Open(n.Root, n.ID.Signer.Public(), n.A.Session(), nil)
	if err != nil {
		n.TB.Fatal(err)
	}
	return mb
}

// Records returns the node's unread mailbox records, read from the file.
func (n *Node) Records() []mailbox.Record {
	n.TB.Helper()
	recs, err := n.Mailbox().Records()
	if err != nil {
		n.TB.Fatal(err)
	}
	return recs
}

// Known returns how many messages the node's mailbox knows: unread records
// and tombstones of consumed or superseded ones.
func (n *Node) Known() int {
	n.TB.Helper()
	tombs, err := n.Mailbox().Tombstones()
	if err != nil {
		n.TB.Fatal(err)
	}
	return len(n.Records()) + len(tombs)
}

// WaitText calls a tool until its text contains want.
func (n *Node) WaitText(name string, args map[string]any, want string) string {
	n.TB.Helper()
	var text string
	Eventually(n.TB, fmt.Sprintf("%s to show %q", name, want), func() bool {
		text, _ = n.Call(name, args)
		return strings.Contains(text, want)
	})
	return text
}

// WaitDelivered waits until the message msgID is committed to the node's
// mailbox. By then replies to its sender go to the session it came from.
func (n *Node) WaitDelivered(msgID string) {
	n.TB.Helper()
	Eventually(n.TB, "message "+msgID+" delivered", func() bool { return n.added.has(msgID) })
}

// WaitDropped waits until the gate rejected the message msgID for reason
// (a gate.Reason value).
func (n *Node) WaitDropped(reason, msgID string) {
	n.TB.Helper()
	Eventually(n.TB, fmt.Sprintf("message %s dropped as %s", msgID, reason), func() bool {
		return n.drops.has(reason + ":" + msgID)
	})
}

// Drops returns "<reason>:<msg_id>" for every message the gate rejected.
func (n *Node) Drops() []string { return n.drops.snapshot() }

// TextRecords returns the full-text records (pairing notices) the node's
// sink received.
func (n *Node) TextRecords() []delivery.Record {
	var out []delivery.Record
	for _, r := range n.Sink.Records() {
		if !strings.HasPrefix(r.Content, "[Interlink inbox notice]") {
			out = append(out, r)
		}
	}
	return out
}

// WaitNotice waits for a pairing notice containing want.
func (n *Node) WaitNotice(want string) delivery.Record {
	n.TB.Helper()
	var got delivery.Record
	Eventually(n.TB, "a pairing notice with "+want, func() bool {
		for _, r := range n.TextRecords() {
			if strings.Contains(r.Content, want) {
				got = r
				return true
			}
		}
		return false
	})
	return got
}

// Eventually polls cond until it holds, failing after 15 s.
func Eventually(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	testutil.Eventually(tb, 15*time.Second, what, cond)
}

// MsgID extracts the msg_id from a send_message result.
func MsgID(tb testing.TB, result string) string {
	tb.Helper()
	_, rest, ok := strings.Cut(result, "(msg_id ")
	if !ok {
		tb.Fatalf("no msg_id in %q", result)
	}
	id, _, _ := strings.Cut(rest, ")")
	return id
}
