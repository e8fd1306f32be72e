//go:build !natsbench

package target

import "errors"

// EmbeddedNATS reports whether this binary can start a NATS server of its
// own. The server is a test dependency of the project; only a binary built
// with the natsbench tag links it.
const EmbeddedNATS = false

func startNATSServer(bool) (string, func() error, error) {
	return "", nil, errors.New("built without a NATS server")
}
