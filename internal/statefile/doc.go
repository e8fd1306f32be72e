// Package statefile does safe read-modify-write of small shared state files.
//
// Several processes (and goroutines) on one machine share files such as
// peers.json, the pairing state and the mailbox. Every change goes through
// [Update], which
//
//  1. takes an exclusive, blocking advisory lock on a sidecar lock file,
//  2. re-reads the data file under that lock (never a cached copy),
//  3. lets the caller compute the new contents, and
//  4. replaces the file atomically with [WriteAtomic]: a temp file in the
//     same directory is written, synced, closed and renamed over the target,
//     then the directory is synced (Unix only).
//
// Callers that must do something else between computing the new contents
// and writing them run under the same lock with [Locked] (or take it with
// [Lock]) and then use [Read] and [WriteAtomic] themselves. [UpdateContext],
// [Locked] and [LockContext] stop waiting for the lock when their context
// ends, so a process that is shutting down is never held up by another
// process sitting on a lock. A [Cache] keeps the value a file decoded to, so
// that reading the same bytes again skips the decoding.
//
// Readers that only read use [Read] and take no lock: because the data file
// is only ever replaced by rename, a reader sees either the old or the new
// contents in full, never a mix.
//
// # Lock files
//
// The lock lives in a separate sidecar file, named by [LockPath], so that the
// data file itself can be replaced freely. The sidecar is created when
// missing and is never truncated or deleted; deleting it would let two
// writers lock different inodes. On Unix the lock is flock(2), the same
// primitive other implementations sharing these folders use (fcntl locks
// would not exclude them); on Windows it is LockFileEx. Inside one process,
// calls for the same lock path are also serialized by a mutex, so the
// exclusion holds even where the OS lock is per process.
//
// # Caveats
//
// The lock is advisory: it only excludes writers that also take it. The
// data path should be resolved once (symlinks included) by the caller, so
// that every writer names the same lock file.
package statefile
