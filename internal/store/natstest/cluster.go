package natstest

import (
	"context"
	"net"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// clusterReady bounds how long StartCluster waits for JetStream to answer
// once every server runs: the servers must first elect a leader.
const clusterReady = 30 * time.Second

// Cluster is a JetStream cluster of servers in the test process, each with
// its store in a directory of its own.
type Cluster struct {
	// Servers are the cluster's servers, named natstest-1, natstest-2 …
	Servers []*Server
}

// ClusterOptions holds optional settings for [StartCluster]; nil means
// defaults.
type ClusterOptions struct {
	// MaxPayloads are the servers' max_payload in bytes, in the order of
	// [Cluster.Servers]; a missing or zero entry means
	// [DefaultMaxPayload]. A cluster whose servers differ here is what
	// an operator gets who configured them one by one.
	MaxPayloads []int32
}

// maxPayload returns the max_payload of server i.
func (o *ClusterOptions) maxPayload(i int) int32 {
	if o == nil || i >= len(o.MaxPayloads) || o.MaxPayloads[i] == 0 {
		return DefaultMaxPayload
	}
	return o.MaxPayloads[i]
}

// StartCluster runs a cluster of n servers with JetStream, on 127.0.0.1
// and free ports, and returns once JetStream answers. Every server stops
// when the test ends; one that is shut down comes back with
// [Server.Restart], on the same ports and with the same store.
func StartCluster(tb testing.TB, n int, opts *ClusterOptions) *Cluster {
	tb.Helper()
	var c *Cluster
	for attempt := 1; c == nil; attempt++ {
		var err error
		if c, err = startCluster(tb, n, opts); err != nil {
			if attempt == clusterAttempts {
				tb.Fatalf("natstest: %v", err)
			}
			tb.Logf("natstest: %v; trying other ports", err)
		}
	}
	// Wait until the cluster's JetStream has a leader.
	nc, err := nats.Connect(c.URL())
	if err != nil {
		tb.Fatalf("natstest: %v", err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		tb.Fatalf("natstest: %v", err)
	}
	deadline := time.Now().Add(clusterReady)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err := js.AccountInfo(ctx)
		cancel()
		if err == nil {
			return c
		}
		if time.Now().After(deadline) {
			tb.Fatalf("natstest: JetStream of a cluster of %d not ready within %v: %v", n, clusterReady, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// clusterAttempts is how often StartCluster tries to start a cluster: the
// ports it picks may be taken by someone else before the servers bind them.
const clusterAttempts = 3

// startCluster starts n servers with routes to each other on ports picked
// free, and stops them again if one does not start.
func startCluster(tb testing.TB, n int, opts *ClusterOptions) (*Cluster, error) {
	// Every server is told the routes to all; JetStream in a cluster
	// does not start without them.
	var routes []*url.URL
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		routes = append(routes, &url.URL{Scheme: "nats-route", Host: ln.Addr().String()})
		ln.Close()
	}
	c := &Cluster{}
	for i := range n {
		port, _ := strconv.Atoi(routes[i].Port())
		name := "natstest-" + strconv.Itoa(i+1)
		s := &Server{tb: tb, log: newTestLog(tb, name), opts: server.Options{
			ServerName: name,
			Host:       "127.0.0.1",
			Port:       server.RANDOM_PORT,
			NoLog:      true,
			NoSigs:     true,
			MaxPayload: opts.maxPayload(i),
			JetStream:  true,
			StoreDir:   tb.TempDir(),
			Cluster: server.ClusterOpts{
				Name: "natstest",
				Host: "127.0.0.1",
				Port: port,
			},
			Routes: routes,
		}}
		if err := s.tryStart(); err != nil {
			for _, started := range c.Servers {
				started.Shutdown()
			}
			return nil, err
		}
		tb.Cleanup(s.Shutdown)
		c.Servers = append(c.Servers, s)
	}
	return c, nil
}

// URL returns the client URLs of every server, separated by commas, as a
// client of the whole cluster is given them.
func (c *Cluster) URL() string {
	urls := make([]string, len(c.Servers))
	for i, s := range c.Servers {
		urls[i] = s.URL()
	}
	return strings.Join(urls, ",")
}

// Server returns the server named name, failing the test if there is none.
func (c *Cluster) Server(name string) *Server {
	for _, s := range c.Servers {
		if s.Name() == name {
			return s
		}
	}
	c.Servers[0].tb.Fatalf("natstest: no server %q in the cluster", name)
	return nil
}
