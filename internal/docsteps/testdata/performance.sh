#!/usr/bin/env bash
# docs/PERFORMANCE.md, command by command. TestPerformanceAsWritten runs it
# with a fresh HOME in a copy of the module (the commands write cpu.out,
# an interlink-bus binary and database files where they run), and
# TestDocumentedCommandsAreInTheWalkthrough checks that every command the
# document shows appears here as written. A block the document marks
# "shortened with FLAGS" may have some of those flags appended to its
# lines, so that each benchmark runs for a moment rather than minutes;
# nothing else is changed.
set -euo pipefail

step() { printf '\n== %s\n' "$*"; }
# healthy waits up to ten seconds for a bus on 127.0.0.1:$1.
healthy() {
  for _ in $(seq 100); do
    curl -fsS "http://127.0.0.1:$1/healthz" >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  echo "no bus answered on 127.0.0.1:$1" >&2
  return 1
}

step "README 1: install"
go install ./cmd/...
export PATH="$(go env GOPATH)/bin:$PATH"

step "In memory, sequential"
interlink-bus bench --keepalive --with-floor --duration 10s --rounds 5 --duration 300ms --rounds 1

step "Where the time goes (a CPU profile)"
go test -run='^$' -bench='RoundTrip/keepalive' -benchtime=20000x -cpuprofile cpu.out ./internal/bus -benchtime=1x
go tool pprof -top -cum cpu.out
go test -run='^$' -bench='Handlers' -benchtime=20000x -count=3 ./internal/bus -benchtime=1x -count=1

step "The wire floor"
go test -run='^$' -bench='CheckJSON|Handlers' -benchtime=3s -count=3 ./internal/bus -benchtime=1x -count=1

step "With --db: one fsync per message"
interlink-bus bench --store bolt --keepalive --with-floor --duration 10s --rounds 5 --duration 300ms --rounds 1
go test -run='^$' -bench='BoltTwoCommitFloor|EnqueuePeekDelete/bolt/' -benchtime=2000x -count=2 ./internal/store/bolt -benchtime=1x -count=1
go test -run='^$' -bench='BoltTwoCommitFloor|BoltOneCommitBehindHTTP|EnqueuePeekDelete/bolt/serial' -benchtime=3000x -count=3 ./internal/store/bolt -benchtime=1x -count=1
go test -run='^$' -bench='ThreeRequests|FileSync|BoltTwoCommitFloor|BoltOneCommitBehindHTTP' -benchtime=3s -count=2 ./internal/store/bolt -benchtime=1x -count=1
go test -run='^$' -bench='Sleeping|Spinning|ThreeRequests|FileSync' -count=3 ./internal/store/bolt -benchtime=1x -count=1

step "With --db: 64 senders x 64 receivers"
interlink-bus bench --store bolt --mode pipeline --senders 64 --receivers 64 --keepalive --with-floor --duration 10s --rounds 5 --duration 300ms --rounds 1
interlink-bus bench --store bolt --mode pipeline --senders 64 --receivers 64 --with-floor --duration 5s --duration 300ms

step "An agent's send over a network"
interlink-bus bench --mode agentsend --latency 10ms --keepalive --with-floor --duration 10s --rounds 5 --duration 300ms --rounds 1
interlink-bus bench --mode agentsend --latency 10ms --with-floor --duration 10s --rounds 5 --duration 300ms --rounds 1

step "Signed requests and TLS"
go test -run='^$' -bench='RoundTrip' -benchtime=2s -count=3 ./internal/relay -benchtime=1x -count=1
interlink-bus bench --signed --sealed --keepalive --duration 10s --rounds 5 --duration 300ms --rounds 1
interlink-bus bench --tls --keepalive --duration 10s --rounds 5 --duration 300ms --rounds 1

step "32 senders x 32 receivers, in memory"
interlink-bus bench --mode pipeline --senders 32 --receivers 32 --duration 5s --with-floor --duration 300ms
interlink-bus bench --mode pipeline --senders 32 --receivers 32 --duration 5s --with-floor --keepalive --duration 300ms

step "Wake latency"
interlink-bus bench --mode wake --duration 5s --with-floor --duration 300ms
interlink-bus bench --mode wake --duration 5s --with-floor --keepalive --duration 300ms
for idle in 0 100 10000; do
  interlink-bus --addr 127.0.0.1:9441 & PID=$!; sleep 1
  healthy 9441
  interlink-bus bench --url http://127.0.0.1:9441 --bus-pid $PID --mode wake --idle $idle --duration 5s --duration 300ms --idle 10
  kill $PID; wait $PID
done

step "Parked polls"
interlink-bus bench --mode parked --polls 10000 --duration 10s --polls 50 --duration 300ms
interlink-bus bench --mode parked --polls 10000 --duration 10s --keepalive --polls 50 --duration 300ms

step "Memory"
interlink-bus --addr 127.0.0.1:9441 & PID=$!; sleep 2; grep VmRSS /proc/$PID/status; kill $PID; wait $PID
interlink-bus --addr 127.0.0.1:9441 --db ./idle.db & PID=$!; sleep 2; grep VmRSS /proc/$PID/status; kill $PID; wait $PID
interlink-bus --addr 127.0.0.1:9441 & PID=$!; sleep 1
healthy 9441
interlink-bus bench --url http://127.0.0.1:9441 --bus-pid $PID --mode fill --fill-routes 10000 --fill-msgs 10 --size 1024 --senders 8 --duration 120s --duration 300ms
grep VmRSS /proc/$PID/status
kill $PID; wait $PID
interlink-bus bench --mode roundtrip --fill-routes 10000 --fill-msgs 10 --size 1024 --duration 60s --duration 300ms

step "Many routes"
interlink-bus bench --mode roundtrip --duration 5s --duration 300ms
interlink-bus bench --mode roundtrip --routes 10000 --duration 5s --duration 300ms
interlink-bus bench --mode roundtrip --fill-routes 10000 --fill-msgs 1 --duration 5s --duration 300ms
interlink-bus bench --mode roundtrip --fill-routes 10000 --fill-msgs 10 --size 1024 --duration 60s --duration 300ms

step "Hostile clients"
go test -run='RosterFlood|Stalled|SlowBodies' -v ./internal/hostile
go test -run='^$' -bench=BoltReopen -benchtime=20x ./internal/store/bolt -benchtime=1x

step "NATS JetStream"
go build -tags natsbench -o interlink-bus ./cmd/interlink-bus
for store in memory bolt nats "nats --nats-sync-always" "nats --buses 2"; do
  ./interlink-bus bench --store $store --mode roundtrip --duration 5s --with-floor --duration 300ms
  ./interlink-bus bench --store $store --mode pipeline --senders 32 --receivers 32 --duration 5s --with-floor --duration 300ms
  ./interlink-bus bench --store $store --mode wake --duration 5s --with-floor --duration 300ms
done
for store in bolt nats; do
  ./interlink-bus bench --store $store --mode roundtrip --duration 5s --duration 300ms
  ./interlink-bus bench --store $store --mode pipeline --senders 32 --receivers 32 --duration 5s --duration 300ms
done
for buses in 2 3; do
  ./interlink-bus bench --store nats --buses $buses --mode pipeline --senders 32 --receivers 32 --duration 5s --duration 300ms
done
go build -o nats-server github.com/nats-io/nats-server/v2
printf 'listen: 127.0.0.1:4222\nmax_payload: 8MB\njetstream { store_dir: "%s" }\n' "$PWD/js" > nats.conf
./nats-server -c nats.conf -l nats.log & NATS=$!; sleep 1
./interlink-bus --addr 127.0.0.1:9441 --nats nats://127.0.0.1:4222 --nats-stream THREE & B1=$!; sleep 1
./interlink-bus --addr 127.0.0.1:9442 --nats nats://127.0.0.1:4222 --nats-stream THREE & B2=$!
./interlink-bus --addr 127.0.0.1:9443 --nats nats://127.0.0.1:4222 --nats-stream THREE & B3=$!; sleep 1
healthy 9441; healthy 9442; healthy 9443
cut -d' ' -f14,15 /proc/$NATS/stat /proc/$B1/stat /proc/$B2/stat /proc/$B3/stat
printf '%s\n' 1 2 3 | xargs -P 3 -I{} ./interlink-bus bench --url http://127.0.0.1:944{} --mode pipeline --senders 32 --receivers 32 --duration 10s --duration 300ms
cut -d' ' -f14,15 /proc/$NATS/stat /proc/$B1/stat /proc/$B2/stat /proc/$B3/stat
kill $B1 $B2 $B3 $NATS; wait $B1 $B2 $B3 $NATS

step "Full queues"
interlink-bus --addr 127.0.0.1:9440 & PID=$!; sleep 1
healthy 9440
interlink-bus bench --url http://127.0.0.1:9440 --bus-pid $PID --mode full --size 1048000 --senders 2 --keepalive --duration 60s --duration 300ms
kill $PID; wait $PID
interlink-bus --addr 127.0.0.1:9440 & PID=$!; sleep 1
healthy 9440
interlink-bus bench --url http://127.0.0.1:9440 --bus-pid $PID --mode full --size 16 --routes 1000000 --senders 4 --keepalive --duration 4m --duration 300ms
kill $PID; wait $PID

step "A roster of 10,000 sessions"
go test -run='^$' -bench='RosterScale' -benchtime=2s -count=3 ./internal/bus -benchtime=1x -count=1
go test -run='^$' -bench='FetchRosterScale' -benchtime=3x -count=3 ./internal/relay -benchtime=1x -count=1
go test -count=3 -run='TestSendToAKnownPeerReadsItsEntriesAlone' -v ./internal/agent/tools
go test -count=1 -run='TestIdleAgentMakesAtMostThreeRequestsAMinuteBesidesItsPoll' -v ./internal/agent

step "Agent"
go test -run='^$' -bench=StartToInitialize -benchtime=200x -count=3 ./cmd/interlink-mcp -benchtime=1x -count=1
go test -run='^$' -bench=SendToCommit -benchtime=300x -count=3 ./internal/agent -benchtime=1x -count=1
go test -run='^$' -bench='Receive4096|Acknowledge4096|Retain4000|Floor' -benchtime=2s -count=3 ./internal/mailbox -benchtime=1x -count=1
go test -run='^$' -bench='CommitBeside4000Read|Intake' -benchtime=2s -count=3 ./internal/mailbox -benchtime=1x -count=1
go test -run='^$' -bench='Enqueue|FloorWriteAtomic' -benchtime=200x -count=3 ./internal/outbox -benchtime=1x -count=1
go test -run='^$' -bench='WaitPendingNotice|NpxTrivialBin' -benchtime=50x ./cmd/interlink-mcp -benchtime=1x

step "Sealed messages"
go test -run='^$' -bench=SealedAndPlainToCommit -benchtime=300x -count=3 ./internal/agent -benchtime=1x -count=1
go test -run='^$' -bench='(SealMessage|OpenMessage|Ed25519Sign|Ed25519Verify)/1KiB' -count=3 ./internal/seal -benchtime=1x -count=1

step "Signed and sealed messages, end to end"
go test -run='^$' -bench=SignedSealedAndPlainToCommit -benchtime=300x -count=3 ./internal/agent -benchtime=1x -count=1

step "End-to-end receipts"
go test -run='^$' -bench=ReceiptsOnAndOff -benchtime=300x -count=3 ./internal/agent -benchtime=1x -count=1
go test -run='^$' -bench=ReceiptStages -benchtime=20x -count=3 ./internal/agent -benchtime=1x -count=1

step "Mailbox at its bound"
go test -run='^$' -bench=ReserveQuiet4096 -benchtime=2s -count=3 ./internal/mailbox -benchtime=1x -count=1

step "all documented steps ran"
