// Package wire is the HTTP wire format of an interlink bus: every request
// body, query and answer of its endpoints, their limits and headers,
// encoded and decoded here for the bus (package bus) and for its clients
// (the agent's relay client, package relay, and the load generator).
//
// # Requests and answers
//
//	POST /send        {"to":ROUTE,"payload":ANY}       202, empty body
//	GET  /recv        ?me=ROUTE&timeout_ms=N            200 {"ack":KEY,"envelope":{"payload":ANY,"ts":MS},"status":"message"}
//	                                                    200 {"status":"timeout"}
//	POST /ack         {"me":ROUTE,"ack":KEY}            200, empty body
//	POST /announce    a signed announcement             202, empty body
//	POST /unregister  {"pubkey":KEY,"session":{...}}    202, empty body
//	GET  /roster                                        200 {"roster":[{"age_ms":N,...announcement},...]}
//	GET  /healthz                                       200 {"status":"ok"}
//
// Every answer other than 2xx carries {"error":"..."}; a failed long-poll
// carries {"status":"error","error":"..."} ([ErrorAnswer]).
//
// Encoders write what [identity.Marshal] writes: compact JSON without HTML
// escaping, keys in the order above, so that a text keeps its bytes as far
// as JSON allows. The signed message a payload carries, and its canonical
// encoding, belong to package identity; to the bus a payload is any JSON.
//
// # Decoding
//
// Request bodies must be one JSON value in UTF-8, without unpaired surrogate
// escapes or numbers beyond float64, nested at most [MaxDepth] deep
// ([CheckJSON]); member names match exactly. The usual shapes of the hot
// requests (/send, /ack, /recv) are read in one pass without allocating
// ([Valid] and a scan for the members wanted), the rest by a general
// decoder that also writes every error; fuzz tests hold the two to the
// same result on every input. The answers a client reads may come from any
// relay, so their decoders ([DecodeRecvAnswer], [RosterElements]) accept
// what the original's clients accept, and one bad roster element never
// spoils the others.
package wire
