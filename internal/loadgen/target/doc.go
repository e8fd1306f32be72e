// Package target provides what a load run measures: a bus started in this
// process on a free 127.0.0.1 port, served as interlink-bus serves one
// ([bus.Serve], metrics included), or a bus at a URL that answers.
//
// An in-process bus has a memory, bbolt or NATS JetStream store; on NATS
// there may be two buses on one stream, the first taking sends and the
// second polls and acknowledgements, with a NATS server at a URL or one
// started in this process when the binary is built with the natsbench
// tag. [Target.Stop] shuts it down and removes what it made: the
// temporary bbolt file, the run's stream, the server's folder.
//
// The package also has what the load generator sets a bus beside or
// starts apart from it: the loopback HTTP server of a floor
// ([LoopbackServer]), the wire stub ([WireStub]) that answers in the bus's
// wire format and does nothing else, and bus processes ([StartProcess])
// whose memory, open files, open-file limit and processor time are read
// from /proc, and this process's own open-file limit, which it raises for
// the processes it starts ([RaiseFileLimit]), and processor time
// ([SelfCPU]). A target's memory is
// that of this process for an in-process bus and that of a given process
// for a bus at a URL.
package target
