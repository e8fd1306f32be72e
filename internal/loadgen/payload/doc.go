// Package payload makes and reads the payloads a load run sends. A
// payload is a JSON string whose content starts with the message id and
// its send time, then pads with 'x' to the requested size:
//
//	"s3-1742.1234567890.xxxxxxxx…"
//
// The send time is nanoseconds on the sending run's monotonic clock, so
// only the process that sent a payload can turn it into a latency. The
// content is never shorter than id and time need.
package payload
