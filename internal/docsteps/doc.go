// Package docsteps runs the first steps a new user takes, as the README's
// "Getting started" and docs/DEPLOY.md write them, in a fresh home folder:
// install, start a bus, create an identity, set up the hosts, write the
// systemd unit and let two sessions exchange a message. Its tests keep the
// walkthrough script and the documents in step: every command the
// documents show appears in the script as written. It has no code a binary
// links.
package docsteps
