// Package docsteps runs the steps the documents tell a user to type, as
// they are written, in a fresh home folder: the README's "Getting started"
// with docs/DEPLOY.md and docs/OPERATIONS.md (install, start a bus, create
// an identity, set up the hosts, let two sessions exchange a message, run
// doctor, write the systemd unit), and every command of
// docs/PERFORMANCE.md, each benchmark for a moment. Its tests keep the
// walkthrough scripts and the documents in step: every block of commands
// those documents (and SECURITY.md) show is in a script as written, or
// marked in the Markdown as one the walkthrough cannot run, with the
// reason. It has no code a binary links.
package docsteps
