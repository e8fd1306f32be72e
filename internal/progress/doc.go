// Package progress keeps the progress markers of one session's current task
// and implements the reminder hook that reads them.
//
// A peer opens a task by sending a message with a task_id and no status.
// While the session works on it, the peer hears nothing unless the session
// sends updates, so the server records when the task began and when the
// session last reported, and a hook that the host runs after each tool call
// reminds the model when it has been quiet for too long. The server side is
// [Markers]; the hook is [Nudge].
//
// # Files
//
// Everything lives in <state root>/task/<session>/, one folder per session,
// so sibling sessions never see each other's tasks:
//
//   - current-task.json: the task being worked on, as compact JSON
//     {"task_id":"...","peer":"...","since":<unix ms>}. The peer is the
//     local petname of the requester; since is when the request arrived.
//     The file exists only while a task is open.
//   - last-update: when the session last sent an update or a final status,
//     as decimal Unix milliseconds in plain text.
//   - last-nudge: when the hook last printed a reminder, in the same form.
//
// The server writes current-task.json and last-update; the hook only reads
// them and writes last-nudge. Every file is replaced whole by rename, so a
// reader sees one complete version. Changes to current-task.json (write, or
// remove when it names a given task) are made under the lock file
// current-task.lock, so removing one task's marker cannot remove the marker
// of a task that has just replaced it. Other implementations may share the
// folder; they need not take the lock, since the worst a race can cause is
// one reminder too many or too few.
//
// # Rules
//
// An opening request (task id, no status) replaces the marker and marks the
// session as just updated. A cancellation from the peer, a final status the
// session sends (result, failed, canceled), and the cancel_task tool each
// remove the marker, but only when it names that same task. An update or a
// final status the session sends refreshes last-update.
//
// The hook reminds only when a marker exists and both the last update and
// the last reminder are older than the interval. A missing last-update
// counts from the marker's since; a missing last-nudge counts as long ago.
// A timestamp file that does not hold a decimal number counts as missing.
//
// # Untrusted content
//
// The task id and, through the opening request, the task itself come from
// a remote peer. Markers stores the id unchanged, so that it matches exactly
// when the task ends. The hook cleans and bounds both the id and the peer
// name with package untrusted and quotes them before they reach the
// reminder, so that they cannot add lines or markup to the model's context.
// Session ids become folder names and are checked with
// [route.ValidateSession] first.
//
// # Errors
//
// Progress markers are a convenience: callers log errors and carry on. A
// marker file that cannot be read as a task is reported as [ErrCorrupt];
// it is never removed by a rule that cannot tell which task it names, and
// an opening request overwrites it.
package progress
