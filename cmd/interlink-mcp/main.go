// Command interlink-mcp connects a coding agent to other agents over
// interlink. This build has the keygen command; see run.go for the rest.
package main

import "github.com/interlink-go/interlink/internal/cmdline"

func main() { cmdline.Main(run) }
