// Package stall measures what connections left unfinished cost a bus: for
// each way of leaving one (stalled in its headers, in its body, with a body
// declared to a route that never reads it, kept idle, parked in a
// long-poll, ...), a bus process of its own is started, its memory read,
// that many connections stalled that way opened, and its memory and the
// connections it holds read again.
//
// Each kind gets a fresh process so that what one kind left behind does
// not count for the next.
package stall
