//go:build hosttest

// Package hosttest runs the built interlink binaries under real MCP hosts
// and clients installed from npm, such as the official MCP TypeScript SDK
// and Claude Code. Claude Code talks to a fake Messages API on loopback
// whose answers each test scripts, so no test reaches a real model.
//
// The tests build only with the hosttest tag:
//
//	go test -tags hosttest ./internal/hosttest/
//
// They need node and npm on PATH and npm registry access on the first run;
// without them each test skips with one line saying why. npm packages are
// installed once under .hosttools/ at the repository root and reused. Every
// process a test starts runs on loopback with its own HOME and state
// folders, and is killed when the test ends.
package hosttest
