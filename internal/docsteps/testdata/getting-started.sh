#!/usr/bin/env bash
# The README's "Getting started", docs/DEPLOY.md and docs/OPERATIONS.md,
# command by command, as a new user types them. TestGettingStartedAsWritten
# runs it with a fresh HOME from the repository root, in a network
# namespace of its own where the documents' ports are free;
# TestDocumentedCommandsAreInTheWalkthrough checks that every command those
# documents show appears here as written. A block of commands that cannot
# run here is marked in its document, above the block, as
# "<!-- walkthrough: not run: REASON -->".
set -euo pipefail

step() { printf '\n== %s\n' "$*"; }
# healthy waits up to ten seconds for the bus on the default port.
healthy() {
  for _ in $(seq 100); do
    curl -fsS http://127.0.0.1:9440/healthz >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  echo "the bus did not answer on 127.0.0.1:9440" >&2
  return 1
}
# stop_bus stops the bus started last and waits for it to exit.
stop_bus() { kill -TERM "$bus"; wait "$bus"; }

step "README 1: install"
go install ./cmd/...
export PATH="$(go env GOPATH)/bin:$PATH"
interlink-mcp --version

step "README 2: start a bus (in the background here, not in a terminal of its own)"
interlink-bus &
bus=$!
trap 'kill "$bus" 2>/dev/null || true' EXIT
healthy
curl http://127.0.0.1:9440/healthz
echo
stop_bus

step "README 2 and DEPLOY: a bus whose queues survive a restart"
mkdir -p ~/.local/state/interlink
interlink-bus --db ~/.local/state/interlink/bus.db &
bus=$!
healthy
test -f ~/.local/state/interlink/bus.db

step "README 3: create an identity"
interlink-mcp keygen --out ~/.config/interlink/id.key
echo '{}' > ~/.config/interlink/peers.json
test "$(stat -c %a ~/.config/interlink/id.key)" = 600

step "README 4: connect Claude Code"
interlink-mcp setup claude
test -f ~/.config/interlink/claude-plugin/.mcp.json
test -f ~/.config/interlink/claude-plugin/hooks/hooks.json

step "README 5: two sessions of one identity exchange a message"
# The exchange plays Claude Code: it starts two servers from the plugin's
# .mcp.json, sends from one to the other with to "self", runs the plugin's
# Stop hook for the receiver, and fetches and acknowledges there.
"$DOCSTEPS_EXCHANGE"

step "README 6 and the Codex guide: Codex configuration"
interlink-mcp setup codex | grep -F '[mcp_servers.interlink]'

step "OPERATIONS: doctor, for a session that is not running"
# The bus runs and the plugin is set up, but no server runs for this
# session: the roster check fails and doctor exits 1.
set +e
interlink-mcp doctor --session 3b9d2f4e
echo "doctor exit status $?"
set -e

step "DEPLOY: the systemd user unit"
stop_bus
mkdir -p ~/.config/systemd/user
interlink-bus unit > ~/.config/systemd/user/interlink-bus.service
grep -F "ExecStart=$(go env GOPATH)/bin/interlink-bus --addr 127.0.0.1:9440 --db %S/interlink/bus.db" ~/.config/systemd/user/interlink-bus.service
if command -v systemd-analyze >/dev/null; then
  systemd-analyze verify ~/.config/systemd/user/interlink-bus.service
  echo "systemd-analyze verify: the unit is sound"
else
  echo "docsteps: skipping: systemd-analyze is not installed, the unit was not verified"
fi

step "all documented steps ran"
