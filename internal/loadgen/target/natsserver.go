//go:build natsbench

package target

import (
	"errors"
	"fmt"
	"os"

	"github.com/nats-io/nats-server/v2/server"
)

// EmbeddedNATS reports whether this binary can start a NATS server of its
// own: built with the natsbench tag, it links the server.
const EmbeddedNATS = true

// startNATSServer starts a NATS server with JetStream in this process, on
// a free 127.0.0.1 port, with its store in a temporary folder that stop
// removes.
func startNATSServer(syncAlways bool) (url string, stop func() error, err error) {
	dir, err := os.MkdirTemp("", "interlink-bench-nats-")
	if err != nil {
		return "", nil, err
	}
	srv, err := server.NewServer(&server.Options{
		ServerName: "interlink-bench",
		Host:       "127.0.0.1",
		Port:       server.RANDOM_PORT,
		NoLog:      true,
		NoSigs:     true,
		JetStream:  true,
		StoreDir:   dir,
		MaxPayload: 8 << 20,
		SyncAlways: syncAlways,
	})
	if err != nil {
		return "", nil, errors.Join(fmt.Errorf("NATS server: %v", err), os.RemoveAll(dir))
	}
	srv.Start()
	if !srv.ReadyForConnections(readyWait) {
		srv.Shutdown()
		return "", nil, errors.Join(fmt.Errorf("NATS server not ready within %v", readyWait), os.RemoveAll(dir))
	}
	stop = func() error {
		srv.Shutdown()
		srv.WaitForShutdown()
		return os.RemoveAll(dir)
	}
	return srv.ClientURL(), stop, nil
}
