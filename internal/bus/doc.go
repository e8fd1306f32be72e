// Package bus is the HTTP broker: it relays opaque payloads to per-route
// queues kept in a [store.Store], wakes receivers that long-poll those
// queues, and serves the presence roster (package roster), kept in memory
// or, for several buses on one shared store, in a log they share
// ([Options.RosterLog]).
//
// The bus is deliberately dumb. It never parses a payload beyond the keys of
// the request that carries it, holds no keys and verifies no signatures;
// agents do all of that. Anyone who can reach the port can read, drain and
// flood any queue and rewrite the roster, so the only protection is keeping
// the port on a trusted network.
//
// # Endpoints
//
//	POST /send        {"to":route,"payload":any}      202, empty body; 507 when full
//	GET  /recv        ?me=route&timeout_ms=n           200 message or timeout
//	POST /ack         {"me":route,"ack":key}           200, empty body; 403
//	POST /announce    any object with a string pubkey  202, empty body
//	POST /unregister  the same shape                   202, empty body
//	GET  /roster      [?keys=K1,K2,...]                200 {"roster":[...]} with an ETag; 304 on If-None-Match
//	GET  /healthz                                      200 {"status":"ok"}; 503 while the store is down
//	GET  /                                             200 the status page (HTML)
//
// A /roster answer carries a weak ETag that names the entries listed and
// when each was announced (not their ages); a request whose If-None-Match
// names it gets 304 and no body. keys, 1 to 32 public keys separated by
// commas, lists only the entries of those keys (see [roster.Listing]).
//
// GET routes also answer HEAD. Every response other than 2xx carries a JSON
// body {"error":"..."}; a failed long-poll answers
// {"status":"error","error":"..."} with status 500, so clients back off
// instead of spinning. The status codes follow the original broker's
// framework: 400 for malformed JSON or a bad query, 422 for valid JSON of
// the wrong shape, 413 for bodies over [MaxBodyBytes], 415 for a content
// type other than JSON, 404 and 405 for unknown paths and methods. A
// request that is not complete [DefaultRequestTimeout] after it started
// gets 408 (or, if its route reads no body, that route's answer) and
// its connection is closed; headers over [MaxHeaderBytes] or
// [MaxHeaderFields] lines get 431. A send that would take the queues past
// the store's total byte bound gets 507 with Retry-After, and a message
// larger than a route may hold gets 413 (see [Server.refuse]). Serve a
// [Server] with [Serve], which applies these connection rules: the HTTP
// server of [NewHTTPServer] on a listener from [Listen], whose header
// screen is package screen. Request bodies and answers are encoded and
// decoded by package wire.
//
// # Differences from the original broker
//
// All of them are invisible to well-behaved clients:
//
//   - A message wakes every long-poll parked on its route, not just one.
//   - timeout_ms is clamped to [MaxRecvTimeout].
//   - Routes longer than [MaxRouteBytes], not valid UTF-8, or holding a
//     control character (NUL included) are refused with 400. A NUL would let
//     route "a" see and ack the messages of route "a\x00b".
//   - Announcements over [MaxAnnounceBytes] are refused with 413.
//   - Queues are bounded in bytes as well as in messages: a route over its
//     byte bound drops its oldest messages, as for the count, and a send
//     that would take all queues past their total is refused with 507,
//     which clients retry as they retry every failure. The original's
//     queues had no byte bound.
//   - The roster is bounded in bytes as well as in entries, and when it is
//     full the entry refreshed longest ago gives way to a newcomer; the
//     original ignored newcomers.
//   - Every request must arrive within [DefaultRequestTimeout] and its
//     answer be read within [AnswerTimeout] more; headers are at most
//     [MaxHeaderBytes] and [MaxHeaderFields] lines; when all the
//     connections the open-file limit allows are taken, the client
//     holding the most gives up its oldest one to a newcomer holding
//     fewer.
//   - Request bodies must be UTF-8 JSON without unpaired surrogate escapes
//     or numbers beyond the range of a float64, nested at most 100 deep.
//     The original's JSON parser refused such bodies too; accepting them
//     would store payloads that clients cannot parse, which would block the
//     route for its receiver.
//   - [Server.Shutdown] ends parked long-polls so the HTTP server can stop.
//   - The status page at GET / is new, and interlink-bus serves
//     /metrics (package busmetrics) in front of the bus; the original
//     answered 404 there.
//
// # Status and metrics
//
// The bus keeps atomic totals of the messages it stored, delivered,
// acknowledged and dropped; [Server.Stats] reads them with the current
// sizes for the metrics. The status page (package statuspage) counts the
// stored and delivered messages of the last ten minutes, and shows the
// roster's sessions (cleaned as agents clean them, and escaped by
// html/template), the queue totals and those rates as an inline SVG chart;
// it needs no script and reloads itself.
//
// # Waiters
//
// A long-poll registers on its route before it looks at the queue, and a
// send wakes the route only after its message is committed, so a message
// that arrives between the look and the wait is never missed. The waiter
// map holds only routes with a parked poll: it never grows with routes that
// are merely sent to or polled without waiting.
//
// # Several buses on one store
//
// When the store is shared with other buses ([store.Watcher]), a message
// another bus stored wakes the polls on its route too, through the store's
// watch. Such a wake-up is a hint: the poll looks at the queue again and
// parks again if it finds nothing, and when the store says hints may have
// been lost, every parked poll looks again. With [Options.RosterLog] every
// announcement and removal goes through the shared log, and each bus
// serves /roster from its own copy, which applies the log's changes in its
// order through the same rules; see [roster.Shared]. /healthz answers 503 with
// {"error":"store unavailable"} while a store that can fail and recover
// ([store.Health]) cannot serve.
package bus
