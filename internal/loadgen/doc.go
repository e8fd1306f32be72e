// Package loadgen generates load against an interlink bus and reports the
// throughput and latency percentiles it measured.
//
// A run ([Run]) targets either a bus at a URL or a bus it starts in this
// process on a free 127.0.0.1 port (memory, bbolt or NATS store; package
// target starts it), and performs one scenario ([Mode]):
//
//   - roundtrip: each sender sends to a route of its own, polls it back
//     and acknowledges it, one request after the other. An operation is
//     that three-request cycle.
//   - pipeline: senders send over the routes as fast as a window of
//     messages in flight allows, while receivers long-poll one route each
//     and acknowledge. An operation is a delivered message; its latency
//     runs from send to receipt.
//   - wake: one long-poll waits on a target route, optionally beside many
//     idle ones parked on other routes; an operation is one send and the
//     latency runs until the waiting poll has the message.
//   - floor: no bus, only a trivial loopback HTTP server, hit with the same
//     client settings: the machine's cost per request.
//   - fill: preload routes with messages and report the bus's memory.
//   - full: send messages over many routes until the bus refuses one
//     with 507, its queues holding all its total byte bound allows, and
//     report the bus's memory idle and full, and the bytes it holds.
//   - boltfloor: no bus, only a bbolt file committing a put and a delete in
//     a loop: the least a durable round trip can cost.
//   - agentsend: each sender is an agent's relay client (package relay)
//     sending one message after the other, while the same client
//     long-polls and acknowledges the route as an agent's inbound loop
//     does. An operation is one send.
//   - stall (package stall): for each way of leaving a connection
//     unfinished (stalled in its headers, in its body, with a body
//     declared to a route that never reads it, kept idle, ...), a bus
//     process of its own ([Config.BusCommand]) is started, its memory
//     read, [Config.Conns] connections stalled that way opened, and its
//     memory read again.
//   - parked (package parked): a bus process of its own, [Config.Polls]
//     long-polls parked on it, each on a route and a connection of its
//     own, the open-file limit raised to what they need (or a
//     [parked.ErrFileLimit] error saying which process is short and how
//     many polls fit); the bus's memory above idle and its processor
//     time while they wait are read from /proc, then each poll is woken
//     by a send to its route and the latency runs from the start of that
//     send to the poll's return. Every poll must get its message once.
//
// With [Config.WithFloor] a run measures the floor after its scenario, with
// the same concurrency and three requests per operation (one for wake), so
// the two can be compared; for an in-process bbolt bus it also measures the
// bbolt floor on the same file system. A roundtrip run also measures the
// wire floor: the same cycle, client and checks against a stub in this
// process that keeps each route's last payload and answers in the bus's
// wire format, doing nothing else. The floor's server answers every request
// with an empty 200, so between the two floors lies what any server
// speaking the bus's format pays, and between the wire floor and the bus
// the bus's own work.
//
// # Bounds
//
// Every phase (fill, parking idle polls, the measurement, each floor) stops
// by itself when [Config.Duration] has passed; workers then get a few
// seconds' grace to return, and a run that cannot stop them fails with
// [measure.ErrStuck] rather than hang. Load goes only to loopback addresses unless
// [Config.AllowRemote] says otherwise. By default every request opens a new
// TCP connection; [Config.KeepAlive] reuses them.
//
// # Latency
//
// [Config.Latency] puts a TCP proxy in this process between the load and
// the bus (and the floor's server) that delays every byte by that much in
// each direction and makes a new connection cost one round trip, so that
// the cost of connection setup on a remote relay can be measured on one
// machine. Every result reports dials_per_op, the connections the load
// opened per operation.
//
// # Measurements
//
// Each measurement is a [measure.Result]; the payloads every scenario
// sends are made and read by package payload. Latencies go into a
// [latency.Recorder], which keeps every sample of a modest run and a
// uniform reservoir sample of a long one, so memory stays bounded;
// percentiles use the nearest-rank method. Operations cut off by the
// deadline count neither as done nor as failed. Resident memory is read from
// /proc on Linux: that of this whole process for an in-process bus (bus and
// load generator together), or that of [Config.BusPID] for a bus at a URL;
// elsewhere it is reported as n/a.
package loadgen
