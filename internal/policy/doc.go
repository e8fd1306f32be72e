// Package policy reads and changes peers.json, the list of peers an identity
// accepts ordinary messages from, each under a local name (its petname).
//
// The file is a JSON object mapping petname to an object holding the peer's
// key:
//
//	{
//	  "my-desktop": {
//	    "key": "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"
//	  }
//	}
//
// Other fields of an entry are ignored, so files written by older versions
// (with a "may" field) still load; they are dropped when the file is next
// rewritten. {} is a valid empty policy.
//
// # Invariants
//
// A [Policy] is a bijection: every petname names exactly one key and every
// key has exactly one petname. A file that breaks this, or any other rule,
// is rejected as a whole ([ErrInvalid]); nothing is ever guessed or merged.
// A Policy is an immutable snapshot and safe to share.
//
// An existing petname never moves to another key, and a listed key never
// gets a second name: [Store.Add] reports a [ConflictError] and changes
// nothing, so the operator has to remove the old entry first. Messages are
// attributed by petname, so a name that silently changed hands would show a
// newcomer's words under a name the operator already trusts, and would send
// replies meant for the old peer to the new one.
//
// Nor may a new petname read like the petname of another key
// ([Policy.Resembles]): "Bob" or a Cyrillic "bоb" beside "bob" would pass
// for it just as well. Names are read with package lookalike's one rule,
// from Unicode's confusables and default-ignorable data.
//
// The names "self" and "Interlink" are reserved ([IsReserved]): they stand
// for our own identity and for system notices wherever a sender is named,
// in any spelling a reader would take for them.
//
// # Concurrency
//
// Several processes share one peers.json. Every change made through a
// [Store] is one locked read-modify-write ([statefile.Update]): it takes the
// flock on peers.json.lock, reads the file again, applies the change to what
// it read and replaces the file atomically. Readers ([Store.Load]) take no
// lock and re-read the file on every call; since the file only ever changes
// by rename, they always see one complete version, and changes made by
// sibling processes show up on the next read.
//
// # Names
//
// The Resolve functions turn what an operator or a model typed into a key,
// each with the rules of its call site: petnames only for sending, keys,
// fingerprints and roster names for pairing, both for discovery.
package policy
