package bus

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/testutil"
	"github.com/interlink-go/interlink/internal/wire"
)

// rosterScale is the number of sessions of BenchmarkRosterScale: a
// roster of the size a large relay would serve, within [RosterCap] and
// [MaxRosterBytes].
const rosterScale = 10_000

// countingConn counts the bytes a client connection reads and writes.
type countingConn struct {
	net.Conn
	n *atomic.Int64
}

func (c countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.n.Add(int64(n))
	return n, err
}

func (c countingConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.n.Add(int64(n))
	return n, err
}

// BenchmarkRosterScale lists a roster of 10,000 signed announcements of
// the agent's own shape over loopback HTTP/1.1 with kept connections:
//
//   - healthz: GET /healthz, the floor of one request;
//   - revalidate: GET /roster with the tag of the listing, answered 304;
//   - full: GET /roster, the whole listing read;
//   - lookup: GET /roster?keys=K for one key with two sessions.
//
// wire-B/op is what crossed the connection both ways per request.
func BenchmarkRosterScale(b *testing.B) {
	srv, base := benchServer(b)
	var peer *identity.Signer
	for i := range rosterScale {
		s := testutil.NumberedSigner(b, i)
		info := identity.SessionInfo{SessionID: fmt.Sprintf("0b7d1f3e-2c4a-4f5e-9d6b-%012d", i), Cwd: "/home/dev/src/project",
			GitRoot: "/home/dev/src/project", Summary: "working on the parser"}
		ann := s.AnnounceCaps(fmt.Sprint("node", i), info, identity.Millis(time.Now()), []string{identity.CapSealed})
		body, err := wire.AnnounceBody(ann)
		if err != nil {
			b.Fatal(err)
		}
		srv.roster.Upsert(mustAnnouncement(b, string(body)), srv.millis())
		if i == rosterScale/2 {
			peer = s
			info.SessionID += "-second"
			body, _ = wire.AnnounceBody(s.AnnounceCaps("peer", info, identity.Millis(time.Now()), []string{identity.CapSealed}))
			srv.roster.Upsert(mustAnnouncement(b, string(body)), srv.millis())
		}
	}
	if n := srv.roster.Len(); n != rosterScale+1 {
		b.Fatalf("roster holds %d entries", n)
	}
	var wireBytes atomic.Int64
	dialer := &net.Dialer{}
	client := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dialer.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return countingConn{Conn: c, n: &wireBytes}, nil
	}}}
	defer client.CloseIdleConnections()
	tag := func() string {
		resp, err := client.Get(base + "/roster")
		if err != nil {
			b.Fatal(err)
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.Header.Get("ETag")
	}()
	get := func(b *testing.B, target, inm string, want int) {
		req, err := http.NewRequest(http.MethodGet, base+target, nil)
		if err != nil {
			b.Fatal(err)
		}
		if inm != "" {
			req.Header.Set("If-None-Match", inm)
		}
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != want {
			b.Fatalf("GET %s: %d, %v", target, resp.StatusCode, err)
		}
	}
	for _, c := range []struct {
		name, target, inm string
		want              int
	}{
		{"healthz", "/healthz", "", http.StatusOK},
		{"revalidate", "/roster", tag, http.StatusNotModified},
		{"full", "/roster", "", http.StatusOK},
		{"lookup", "/roster?keys=" + peer.Public().String(), "", http.StatusOK},
	} {
		b.Run(c.name, func(b *testing.B) {
			get(b, c.target, c.inm, c.want) // a kept connection
			wireBytes.Store(0)
			for b.Loop() {
				get(b, c.target, c.inm, c.want)
			}
			b.ReportMetric(float64(wireBytes.Load())/float64(b.N), "wire-B/op")
		})
	}
}
