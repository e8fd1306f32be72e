package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/interlink-go/interlink/internal/testutil"
)

const module = "github.com/interlink-go/interlink"

// busModules are the modules interlink-bus may link besides its own and the
// standard library: its two stores (bbolt; NATS with its keys, ids and
// compression), its metrics (prometheus with its encodings and protobuf),
// and the crypto and text packages the message checks use.
var busModules = []string{
	"filippo.io/edwards25519",
	"github.com/beorn7/perks",
	"github.com/cespare/xxhash/v2",
	"github.com/klauspost/compress",
	"github.com/munnerz/goautoneg",
	"github.com/nats-io/nats.go",
	"github.com/nats-io/nkeys",
	"github.com/nats-io/nuid",
	"github.com/prometheus/client_golang",
	"github.com/prometheus/client_model",
	"github.com/prometheus/common",
	"github.com/prometheus/procfs",
	"go.etcd.io/bbolt",
	"go.mau.fi/util",
	"golang.org/x/crypto",
	"golang.org/x/sys",
	"golang.org/x/text",
	"google.golang.org/protobuf",
}

// agentOnly are the packages of the agent side, which a bus never runs: the
// MCP server and its tools, and the session's state files.
var agentOnly = []string{
	"/internal/agent", "/internal/mailbox", "/internal/outbox", "/internal/inbox", "/internal/pairing",
	"/internal/policy", "/internal/gate", "/internal/delivery", "/internal/codex", "/internal/setup", "/internal/demo",
}

// interlink-bus links only the modules listed in busModules; the MCP
// library in particular is not among them.
func TestBusLinksOnlyItsModules(t *testing.T) {
	for _, mod := range testutil.DepModules(t, module+"/cmd/interlink-bus") {
		if mod != module && !slices.Contains(busModules, mod) {
			t.Errorf("interlink-bus links %s; add it to busModules if the bus is meant to link it", mod)
		}
	}
}

// interlink-bus links none of the agent's packages.
func TestBusLinksNoAgentPackage(t *testing.T) {
	for _, dep := range testutil.Deps(t, module+"/cmd/interlink-bus") {
		for _, p := range agentOnly {
			if dep == module+p || strings.HasPrefix(dep, module+p+"/") {
				t.Errorf("interlink-bus links %s", dep)
			}
		}
	}
}
