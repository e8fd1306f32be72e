//go:build hosttest

package hosttest

import (
	"os"
	"path/filepath"
	"testing"
)

// world is what a test's interlink servers share: a bus and an identity.
type world struct {
	home  string
	bus   string // the bus's base URL
	key   string // the identity's key file
	peers string // the identity's peers.json
}

// newWorld starts a bus, and creates a key and an empty peers.json in a
// folder of home other than the default one, so that a server that does
// not get the paths does not start.
func newWorld(t *testing.T, home string) *world {
	t.Helper()
	w := &world{home: home, bus: startBus(t, home)}
	conf := filepath.Join(home, "identity")
	w.key = filepath.Join(conf, "id.key")
	keygen(t, home, w.key)
	w.peers = filepath.Join(conf, "peers.json")
	if err := os.WriteFile(w.peers, []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return w
}

// serverEnv returns the environment that points an interlink server at w,
// with debug logs; extra comes last.
func (w *world) serverEnv(extra ...string) []string {
	return append([]string{
		"INTERLINK_KEY=" + w.key, "INTERLINK_PEERS=" + w.peers, "INTERLINK_URL=" + w.bus, "INTERLINK_LOG_LEVEL=debug",
	}, extra...)
}

// serverArgv returns the command line, the executable first, of
// interlink-mcp as the session session of w's identity, with debug logs;
// the flags extra come before --session.
func (w *world) serverArgv(t testing.TB, session string, extra ...string) []string {
	t.Helper()
	argv := []string{filepath.Join(binaries(t), "interlink-mcp"), "--key", w.key, "--peers", w.peers, "--url", w.bus}
	argv = append(argv, extra...)
	return append(argv, "--session", session, "--log-level", "debug")
}
