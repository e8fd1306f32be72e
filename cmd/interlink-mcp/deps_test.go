package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/interlink-go/interlink/internal/testutil"
)

const (
	module  = "github.com/interlink-go/interlink"
	mcpMain = module + "/cmd/interlink-mcp"
)

// mcpModules are the modules interlink-mcp may link besides its own and the
// standard library. Every session runs one, so it stays small: the MCP
// library and its helpers, the file lock, the JSON schema check of tool
// arguments, and the crypto and text packages.
var mcpModules = []string{
	"filippo.io/edwards25519",
	"github.com/gofrs/flock",
	"github.com/google/jsonschema-go",
	"github.com/google/uuid",
	"github.com/mark3labs/mcp-go",
	"github.com/santhosh-tekuri/jsonschema/v6",
	"github.com/spf13/cast",
	"github.com/yosida95/uritemplate/v3",
	"go.mau.fi/util",
	"golang.org/x/crypto",
	"golang.org/x/sys",
	"golang.org/x/text",
}

// busOnly are the modules of the bus's storage and metrics. The demo serves
// a bus in memory, which needs none of them.
var busOnly = []string{"github.com/nats-io/", "go.etcd.io/bbolt", "github.com/prometheus/", "github.com/klauspost/compress"}

// interlink-mcp links only the modules listed in mcpModules: in particular
// none of the bus's storage or metrics (NATS, bbolt, prometheus), which the
// demo's bus in memory does not need.
func TestMCPLinksOnlyItsModules(t *testing.T) {
	for _, mod := range testutil.DepModules(t, mcpMain) {
		if mod == module || slices.Contains(mcpModules, mod) {
			continue
		}
		why := "add it to mcpModules if every session is meant to link it"
		for _, p := range busOnly {
			if strings.HasPrefix(mod, p) {
				why = "it belongs to the bus's storage or metrics"
			}
		}
		t.Errorf("interlink-mcp links %s: %s", mod, why)
	}
}

// The main of interlink-mcp does command-line work only: no import of its
// own reaches the bus or its queues (the demo has a package of its own).
func TestMCPMainImportsNoBusPackage(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("go command not found: %v", err)
	}
	out, err := exec.Command(gobin, "list", "-f", `{{join .Imports "\n"}}`, mcpMain).Output()
	if err != nil {
		t.Fatalf("go list %s: %v", mcpMain, err)
	}
	for _, imp := range strings.Fields(string(out)) {
		for _, bad := range []string{module + "/internal/bus", module + "/internal/store"} {
			if imp == bad || strings.HasPrefix(imp, bad+"/") {
				t.Errorf("cmd/interlink-mcp imports %s", imp)
			}
		}
	}
}
