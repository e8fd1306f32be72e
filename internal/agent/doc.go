// Package agent is the interlink agent of one host session: an MCP server
// whose tools send and receive signed messages, and the background workers
// that move those messages between the session's files and the relays.
//
// [Agent] only wires the parts together and owns their lifecycle. The parts
// live where their job does:
//
//   - the tools, by concern, in package agent/tools (messaging, mailbox,
//     pairing and peers, sessions and presence, Codex), each group given
//     only what it uses: server.go hands each its own view of the bound
//     session, naming only the session's parts its tools touch;
//   - the files, route, presence and host sink of the bound session in
//     package agent/session;
//   - relay polling, the trust gate and the local commit in package
//     inbound, one loop per relay;
//   - the durable outbox and its sender in package outbox, which sends
//     pairing knocks and confirmations like every other message;
//   - here: the notifier (notifier.go), which wakes the host, the MCP
//     server and its instructions (server.go), and the two ways to reach
//     it (transport.go).
//
// # Lifecycle
//
// [New] reads the key and peers.json and refuses to start without them; a
// Claude Code session is bound to its session id at once. [Agent.Start]
// starts the workers; a Codex session's workers wait until the thread's
// hooks bind it. [Agent.Stop] drains the outbox with the workers still
// running, then stops them, unregisters from the relays and says goodbye
// to the sessions that wrote last, within [StopTimeout]. [Agent.Serve] does
// all of it around an MCP server on standard input and output, and the end
// of input, SIGINT and SIGTERM all end in the same Stop.
//
// # Where a budget goes
//
// Every message this session sends passes one function, the queue of the
// messaging tools, and every notice that wakes the host passes the
// notifier. A limit per peer on what a conversation may cost, sends or
// wake-ups, belongs at those two places and nowhere else.
package agent
