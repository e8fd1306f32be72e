// Package statuspage is the page a bus serves at GET / for people: the
// sessions of its roster, its queue figures and the messages stored and
// delivered over the last ten minutes as an inline SVG chart.
//
// Everything a session announced is cleaned as agents clean it for display
// (package untrusted) and escaped by html/template, so a roster value can
// only ever be text; the page runs no script, loads nothing from elsewhere
// and reloads itself. A bus that requires signed requests shows only what
// an unsigned /roster shows, the public variants of discoverable sessions.
//
// The page costs little however it is asked for: it is rendered at most
// about once per [PageAge], lists at most 500 sessions, and reads each
// roster entry for display once, the first time it lists it.
package statuspage
