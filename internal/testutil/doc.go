// Package testutil holds small helpers that the tests of several packages
// share: a log buffer that is safe to write from many goroutines, polling
// until a condition holds, reading the receipts out of a receive_messages
// or message_status result, deterministic signing keys, and the list of
// packages a package depends on.
//
// Only test files import it; no binary links it.
package testutil
