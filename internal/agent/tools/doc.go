// Package tools holds the MCP tools of an interlink agent, grouped by what
// they are about, one type and one file per group:
//
//   - [Messaging] (messaging.go, with target.go choosing the session a
//     message goes to): send_message, cancel_task;
//   - [Mailbox] (mailbox.go): receive_messages, read_message,
//     acknowledge_messages, message_status, list_pending,
//     conversation_history;
//   - [Peers] (peers.go): request_pair, list_pair_requests, accept_pair,
//     reject_pair, list_peers, add_peer, remove_peer;
//   - [Presence] (presence.go, with roster.go): discover, set_summary,
//     get_my_session_id;
//   - [Codex] (codex.go): bind_codex_session, failed_deliveries.
//
// Each group is given only what it uses, when it is built: what serves the
// whole identity (peers.json, the relays, the signer) as fields, and what
// belongs to the session as a [Scope] of the group's own type
// ([MessagingSession], [MailboxSession], [PeersSession],
// [PresenceSession], [CodexSession]) naming only the session's parts its
// tools read or change. The agent builds each Scope from its
// [session.Binding] with [View]; a test can hand a group a [Fixed] one. A
// tool declares whether it needs the session ([Bound]) or also answers
// before a Codex agent is bound ([Anytime]), where its handler gets a nil
// view; the tool enforces the declaration, so no handler checks it.
//
// # Arguments
//
// Every tool declares its arguments as a JSON Schema in tools/list. A call's
// arguments are checked against it once, by [Checker], before the call
// reaches mcp-go, and a call they do not fit is answered with the JSON-RPC
// error -32602. Handlers then receive their arguments decoded into a struct
// by mcp-go's binding and check only what a schema cannot say: that a peer
// exists, that a receipt matches a message. Those mistakes, and failures of
// the session's files, are JSON-RPC errors too, with the code -32603 that
// mcp-go gives every handler error and a message that starts with
// "invalid params:" or "local state:".
//
// # Texts
//
// The texts of the results are what the model reads and what scripts match
// on. The golden files of the agent package pin them, so a change of wording
// is a decision, not an accident.
package tools
