// Command interlink-bus is the HTTP broker that relays signed messages
// between interlink agents, and, as "interlink-bus bench", a load generator
// for it. See run.go for the command line.
package main

import "github.com/interlink-go/interlink/internal/cmdline"

func main() { cmdline.Main(run) }
