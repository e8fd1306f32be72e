//go:build linux

package agent_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/interlink-go/interlink/internal/agent"
	"github.com/interlink-go/interlink/internal/agent/agenttest"
	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/relay"
	"github.com/interlink-go/interlink/internal/testutil"
	"github.com/interlink-go/interlink/internal/tlsfiles/tlstest"
)

// The machines of the namespace test: the bus's, with one link to each
// of the others, on a /24 of its own.
const (
	netnsPort = "8443"
	netnsEnv  = "INTERLINK_NETNS_CHILD"
)

// netnsLinks are the client namespaces, in the order their files are
// passed to the child (descriptors 3, 4, 5): alice's, bob's and the
// stranger's. Link i joins the bus at 10.0.i+1.1 to the client at
// 10.0.i+1.2.
var netnsLinks = []string{"alice", "bob", "stranger"}

// Agents on three machines, as far as the network goes: the bus in a
// network namespace of its own serving HTTPS with --auth required, alice
// and bob in two others joined to it by veth links, trusting the test
// authority through SSL_CERT_FILE. They exchange messages both ways and
// acknowledge them; a raw capture of every frame in the bus's namespace
// holds no message text, no msg_id and no key in the clear (though it
// does catch a plaintext canary); and a stranger in a fourth namespace,
// without keys or with a key of its own, can read, acknowledge,
// unregister and send nothing.
func TestAgentsAcrossNetworkNamespaces(t *testing.T) {
	if os.Getenv(netnsEnv) != "" {
		return // the child runs TestNetnsChild only
	}
	if os.Geteuid() != 0 {
		t.Skip("network namespaces and veth links need root; run the tests as root (CI does)")
	}
	bin := testutil.BuildBus(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()

	busNS := newNetns(t)
	var clients []*os.File
	for i, name := range netnsLinks {
		ns := newNetns(t)
		clients = append(clients, ns)
		// Names need not be unique on the machine: every link lives in
		// namespaces of this test alone.
		bus, peer := "to-"+name, "eth0"
		if err := inNetns(busNS, func() error { return addVeth(bus, peer, ns) }); err != nil {
			t.Fatalf("veth %s-%s: %v", bus, peer, err)
		}
		if err := inNetns(busNS, func() error { return ifUp(bus, fmt.Sprintf("10.0.%d.1", i+1)) }); err != nil {
			t.Fatal(err)
		}
		if err := inNetns(ns, func() error { return ifUp(peer, fmt.Sprintf("10.0.%d.2", i+1)) }); err != nil {
			t.Fatal(err)
		}
	}

	ca := tlstest.NewAuthority(t, "interlink test authority")
	dir := t.TempDir()
	certFile, keyFile, _ := ca.WriteLeaf(t, dir, "10.0.1.1", "10.0.2.1", "10.0.3.1")
	capture := startCapture(t, busNS)

	logs := &testutil.LockedBuffer{}
	bus := exec.CommandContext(ctx, bin, "--addr", "0.0.0.0:"+netnsPort, "--auth", "required",
		"--tls-cert", certFile, "--tls-key", keyFile)
	bus.Env = append(os.Environ(), "HOME="+dir, "XDG_STATE_HOME="+dir)
	bus.Stdout, bus.Stderr = logs, logs
	busDone, err := startIn(busNS, bus)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = bus.Process.Kill()
		<-busDone
	})

	// A canary sent in plain HTTP to the bus's port from the stranger's
	// namespace: the capture must show it, so a capture that sees no
	// secret did look.
	const canary = "plaintext-canary-4f1d"
	testutil.EventuallyNil(t, 30*time.Second, "the bus to answer on 10.0.3.1", func() error {
		c := &http.Client{Transport: &http.Transport{DialContext: netnsDialer(clients[2]), DisableKeepAlives: true}}
		resp, err := c.Get("http://10.0.3.1:" + netnsPort + "/" + canary)
		if err != nil {
			select {
			case <-busDone:
				t.Fatalf("interlink-bus exited:\n%s", logs)
			default:
			}
			return err
		}
		resp.Body.Close()
		return nil
	})

	child := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestNetnsChild$", "-test.count=1", "-test.v",
		"-test.timeout=90s")
	child.Env = append(os.Environ(), netnsEnv+"=1", "SSL_CERT_FILE="+ca.WriteCA(t, t.TempDir()), "SSL_CERT_DIR="+dir)
	child.ExtraFiles = clients
	out := &testutil.LockedBuffer{}
	child.Stdout, child.Stderr = out, out
	childDone, err := startIn(nil, child)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-childDone; err != nil || !strings.Contains(out.String(), "netns child done") {
		t.Fatalf("child: %v\n%s\nbus log:\n%s", err, out, logs)
	}
	var secrets []string
	for line := range strings.Lines(out.String()) {
		if _, s, ok := strings.Cut(strings.TrimSpace(line), "secret: "); ok {
			secrets = append(secrets, s)
		}
	}
	if len(secrets) < 8 {
		t.Fatalf("the child named %d secrets:\n%s", len(secrets), out)
	}

	flows := capture.stop(t)
	var total int
	handshakes := map[string]bool{}
	for f, data := range flows {
		total += len(data)
		if f.dstPort == 8443 && len(data) > 0 && data[0] == 0x16 { // a TLS handshake record
			handshakes[f.src] = true
		}
	}
	if !handshakes["10.0.1.2"] || !handshakes["10.0.2.2"] || total < 20000 {
		t.Fatalf("the capture is not on the path: %d bytes, TLS handshakes from %v", total, handshakes)
	}
	if !capture.has(flows, canary) {
		t.Fatalf("the capture did not see the plaintext canary")
	}
	for _, s := range append(secrets, "/recv", "/ack", "Interlink-", "timeout_ms") {
		if capture.has(flows, s) {
			t.Errorf("the capture on the bus's link shows %q in the clear", s)
		}
	}
}

// TestNetnsChild is the agents' half of TestAgentsAcrossNetworkNamespaces,
// in a process of its own because Go reads SSL_CERT_FILE once per process.
// Its descriptors 3, 4 and 5 are the namespaces of netnsLinks.
func TestNetnsChild(t *testing.T) {
	if os.Getenv(netnsEnv) == "" {
		t.Skip("runs as a child of TestAgentsAcrossNetworkNamespaces")
	}
	nsA, nsB, nsX := os.NewFile(3, "alice-ns"), os.NewFile(4, "bob-ns"), os.NewFile(5, "stranger-ns")
	client := func(ns *os.File) *http.Client {
		// No TLS configuration: the system's roots, SSL_CERT_FILE among them.
		return &http.Client{Transport: &http.Transport{DialContext: netnsDialer(ns)}}
	}
	urlA, urlB, urlX := "https://10.0.1.1:"+netnsPort, "https://10.0.2.1:"+netnsPort, "https://10.0.3.1:"+netnsPort
	in := func(ns *os.File) *agenttest.Options {
		return &agenttest.Options{Edit: func(c *agent.Config) { c.Timing.HTTPClient = client(ns) }}
	}
	roster := func(url string, ns *os.File, key, session string) bool {
		ros := relay.FetchRoster(t.Context(), []*relay.Client{relay.New(url, &relay.Options{HTTPClient: client(ns)})})
		for _, e := range ros.Entries {
			if e.Key.String() == key && e.Session.SessionID == session {
				return true
			}
		}
		return false
	}

	alice, bob := agenttest.Pair(t)
	carol, stranger := agenttest.NewIdent(t), agenttest.NewIdent(t)
	a := agenttest.Start(t, alice, "a1", []string{urlA}, in(nsA))
	b := agenttest.Start(t, bob, "b1", []string{urlB}, in(nsB))
	agenttest.Eventually(t, "both sessions on the roster", func() bool {
		return roster(urlX, nsX, alice.Key(), "a1") && roster(urlX, nsX, bob.Key(), "b1")
	})

	textAB, textBA := "alice to bob across the veth, sealed and encrypted", "bob answers alice over TLS"
	idAB := agenttest.MsgID(t, a.OK("send_message", map[string]any{"to": "bob", "session": "b1", "text": textAB}))
	b.WaitText("receive_messages", nil, textAB)
	idBA := agenttest.MsgID(t, b.OK("send_message", map[string]any{"to": "alice", "session": "a1", "text": textBA}))
	a.WaitText("receive_messages", nil, textBA)
	a.WaitText("message_status", map[string]any{"msg_id": idAB}, "[bus_accepted]")
	b.WaitText("message_status", map[string]any{"msg_id": idBA}, "[bus_accepted]")
	// Acknowledged: each queue is empty for its own key.
	for _, q := range []struct {
		id  *agenttest.Ident
		url string
		ns  *os.File
		rt  string
	}{{alice, urlA, nsA, alice.Key() + "#a1"}, {bob, urlB, nsB, bob.Key() + "#b1"}} {
		c := relay.New(q.url, &relay.Options{HTTPClient: client(q.ns), Signer: q.id.Signer})
		agenttest.Eventually(t, q.rt+" acknowledged", func() bool {
			d, err := c.Recv(t.Context(), q.rt, 0)
			return err == nil && !d.HasMessage
		})
	}

	// A message waits for carol, whom no agent serves.
	carolRoute := carol.Key() + "#c1"
	textC := "for carol alone, never for the stranger"
	m := identity.Message{From: bob.Key(), To: carol.Key(), Text: textC, TS: identity.Millis(time.Now()),
		MsgID: strings.Repeat("c0", 16), Kind: identity.KindMessage}
	if err := bob.Signer.SignMessage(&m); err != nil {
		t.Fatal(err)
	}
	payload, err := identity.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if err := relay.New(urlB, &relay.Options{HTTPClient: client(nsB), Signer: bob.Signer}).Send(t.Context(), carolRoute, payload); err != nil {
		t.Fatal(err)
	}

	// The stranger, unsigned and then signed with a key of its own.
	hx := client(nsX)
	ackKey := carolRoute + "\x00" + fmt.Sprintf("%020d", 1)
	raw := []struct{ method, target, body string }{
		{"GET", "/recv?me=" + strings.ReplaceAll(carolRoute, "#", "%23") + "&timeout_ms=0", ""},
		{"POST", "/ack", fmt.Sprintf(`{"me":%q,"ack":%q}`, carolRoute, ackKey)},
		{"POST", "/unregister", fmt.Sprintf(`{"pubkey":%q,"session":{"session_id":"a1"}}`, alice.Key())},
		{"POST", "/send", fmt.Sprintf(`{"to":%q,"payload":{"text":"spoofed"}}`, alice.Key()+"#a1")},
	}
	for _, r := range raw {
		req, err := http.NewRequestWithContext(t.Context(), r.method, urlX+r.target, strings.NewReader(r.body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := hx.Do(req)
		if err != nil {
			t.Fatalf("stranger %s %s: %v", r.method, r.target, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || bytes.Contains(body, []byte(textC)) || bytes.Contains(body, []byte("envelope")) {
			t.Errorf("stranger unsigned %s %s: %d %s, want 401 that says nothing of the queue", r.method, r.target, resp.StatusCode, body)
		}
	}
	sx := relay.New(urlX, &relay.Options{HTTPClient: hx, Signer: stranger.Signer})
	if d, err := sx.Recv(t.Context(), carolRoute, 0); !isStatus(err, http.StatusUnauthorized) || d.HasMessage {
		t.Errorf("stranger's signed recv of carol's route: %+v %v, want 401", d, err)
	}
	if err := sx.Ack(t.Context(), carolRoute, ackKey); !isStatus(err, http.StatusUnauthorized) {
		t.Errorf("stranger's signed ack on carol's route: %v, want 401", err)
	}
	if err := sx.Unregister(t.Context(), alice.Key(), identity.SessionInfo{SessionID: "a1"}); !isStatus(err, http.StatusUnauthorized) {
		t.Errorf("stranger's signed unregister of alice: %v, want 401", err)
	}
	// Nothing was taken or removed: carol still finds her message, alice
	// is still listed.
	d, err := relay.New(urlX, &relay.Options{HTTPClient: hx, Signer: carol.Signer}).Recv(t.Context(), carolRoute, 0)
	if err != nil || !d.HasMessage || !bytes.Contains(d.Payload, []byte(textC)) {
		t.Errorf("carol's own recv after the stranger: %+v %v", d, err)
	}
	if !roster(urlX, nsX, alice.Key(), "a1") {
		t.Errorf("alice left the roster after the stranger's unregister")
	}

	for _, s := range []string{textAB, textBA, textC, idAB, idBA, m.MsgID, alice.Key(), bob.Key(), carol.Key()} {
		t.Logf("secret: %s", s)
	}
	t.Log("netns child done")
}

// isStatus reports whether err is a relay's refusal with status code.
func isStatus(err error, code int) bool {
	var se *relay.StatusError
	return errors.As(err, &se) && se.Code == code
}

// startIn starts cmd from an OS thread in the network namespace ns (the
// test's own when ns is nil), where cmd then runs. The thread stays until
// cmd has ended, and cmd is killed if the thread goes first, so a test
// process that dies takes it along. cmd is also killed when its context
// ends, and its output is waited for no longer than a few seconds after
// that. The channel yields cmd's Wait error, then is closed.
func startIn(ns *os.File, cmd *exec.Cmd) (<-chan error, error) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	cmd.WaitDelay = 5 * time.Second
	started := make(chan error, 1)
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: see inNetns
		if ns != nil {
			if err := unix.Setns(int(ns.Fd()), unix.CLONE_NEWNET); err != nil {
				started <- fmt.Errorf("setns: %w", err)
				return
			}
		}
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		done <- cmd.Wait()
		close(done)
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	return done, nil
}

// inNetns runs f on an OS thread moved into the network namespace ns.
// The thread stays locked to the goroutine, so the runtime discards it
// when f returns rather than let other goroutines run in ns.
func inNetns(ns *os.File, f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if err := unix.Setns(int(ns.Fd()), unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("setns: %w", err)
			return
		}
		errc <- f()
	}()
	return <-errc
}

// newNetns makes a new network namespace with its loopback up; the test's
// cleanup closes it, and the namespace goes with its last user.
func newNetns(t *testing.T) *os.File {
	t.Helper()
	errc := make(chan error, 1)
	var ns *os.File
	go func() {
		runtime.LockOSThread() // discarded with the goroutine, see inNetns
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("unshare: %w", err)
			return
		}
		f, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			errc <- err
			return
		}
		ns = f
		errc <- ifFlagsUp("lo")
	}()
	if err := <-errc; err != nil {
		if os.Getenv("CI") == "" {
			t.Skipf("cannot make a network namespace here (%v); CI runs this test as root", err)
		}
		t.Fatal(err)
	}
	t.Cleanup(func() { ns.Close() })
	return ns
}

// addVeth creates, in the calling thread's namespace, the veth pair name
// and peer, with peer moved into the namespace ns. It speaks rtnetlink
// directly (RTM_NEWLINK with the veth link info).
func addVeth(name, peer string, ns *os.File) error {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	const vethInfoPeer = 1 // VETH_INFO_PEER in linux/veth.h
	ifinfo := make([]byte, unix.SizeofIfInfomsg)
	nsfd := binary.NativeEndian.AppendUint32(nil, uint32(ns.Fd()))
	peerInfo := append(append(ifinfo[:len(ifinfo):len(ifinfo)], nlattr(unix.IFLA_IFNAME, cstr(peer))...),
		nlattr(unix.IFLA_NET_NS_FD, nsfd)...)
	linkinfo := append(nlattr(unix.IFLA_INFO_KIND, []byte("veth")),
		nlattr(unix.IFLA_INFO_DATA|unix.NLA_F_NESTED, nlattr(vethInfoPeer|unix.NLA_F_NESTED, peerInfo))...)
	body := append(append(ifinfo[:len(ifinfo):len(ifinfo)], nlattr(unix.IFLA_IFNAME, cstr(name))...),
		nlattr(unix.IFLA_LINKINFO|unix.NLA_F_NESTED, linkinfo)...)
	msg := make([]byte, unix.SizeofNlMsghdr, unix.SizeofNlMsghdr+len(body))
	binary.NativeEndian.PutUint32(msg[0:], uint32(unix.SizeofNlMsghdr+len(body)))
	binary.NativeEndian.PutUint16(msg[4:], unix.RTM_NEWLINK)
	binary.NativeEndian.PutUint16(msg[6:], unix.NLM_F_REQUEST|unix.NLM_F_ACK|unix.NLM_F_CREATE|unix.NLM_F_EXCL)
	binary.NativeEndian.PutUint32(msg[8:], 1)
	msg = append(msg, body...)
	if err := unix.Sendto(fd, msg, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return err
	}
	buf := make([]byte, 4096)
	n, _, err := unix.Recvfrom(fd, buf, 0)
	if err != nil {
		return err
	}
	if n < unix.SizeofNlMsghdr+4 || binary.NativeEndian.Uint16(buf[4:]) != unix.NLMSG_ERROR {
		return fmt.Errorf("rtnetlink: unexpected answer of %d bytes", n)
	}
	if code := int32(binary.NativeEndian.Uint32(buf[unix.SizeofNlMsghdr:])); code != 0 {
		return fmt.Errorf("rtnetlink: %w", unix.Errno(-code))
	}
	return nil
}

// nlattr encodes one netlink attribute, padded to four bytes.
func nlattr(typ uint16, data []byte) []byte {
	b := binary.NativeEndian.AppendUint16(nil, uint16(unix.SizeofRtAttr+len(data)))
	b = binary.NativeEndian.AppendUint16(b, typ)
	b = append(b, data...)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

func cstr(s string) []byte { return append([]byte(s), 0) }

// ifUp gives the interface name the address addr/24 and brings it up.
func ifUp(name, addr string) error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	for _, set := range []struct {
		req uint
		ip  net.IP
	}{{unix.SIOCSIFADDR, net.ParseIP(addr).To4()}, {unix.SIOCSIFNETMASK, net.IPv4(255, 255, 255, 0).To4()}} {
		ifr, err := unix.NewIfreq(name)
		if err != nil {
			return err
		}
		if err := ifr.SetInet4Addr(set.ip); err != nil {
			return err
		}
		if err := unix.IoctlIfreq(fd, set.req, ifr); err != nil {
			return fmt.Errorf("%s: address %s: %w", name, set.ip, err)
		}
	}
	return ifFlagsUp(name)
}

// ifFlagsUp brings the interface name up.
func ifFlagsUp(name string) error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq(name)
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("%s: get flags: %w", name, err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("%s: bring up: %w", name, err)
	}
	return nil
}

// netnsDialer returns a DialContext that makes its connections in the
// network namespace ns: the socket belongs to the namespace of the thread
// that creates it.
func netnsDialer(ns *os.File) func(context.Context, string, string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		var c net.Conn
		err := inNetns(ns, func() error {
			var err error
			c, err = (&net.Dialer{Timeout: 10 * time.Second}).DialContext(ctx, network, addr)
			return err
		})
		return c, err
	}
}

// capture reads every frame of every interface of one namespace through a
// packet socket, as tcpdump -i any would.
type capture struct {
	f      *os.File
	mu     sync.Mutex
	frames [][]byte // guarded by mu
	done   chan struct{}
}

// flow is one direction of a TCP connection.
type flow struct {
	src, dst         string
	srcPort, dstPort uint16
}

func startCapture(t *testing.T, ns *os.File) *capture {
	t.Helper()
	var fd int
	err := inNetns(ns, func() error {
		var err error
		fd, err = unix.Socket(unix.AF_PACKET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, int(htons(unix.ETH_P_ALL)))
		return err
	})
	if err != nil {
		t.Fatalf("packet socket: %v", err)
	}
	c := &capture{f: os.NewFile(uintptr(fd), "capture"), done: make(chan struct{})}
	go func() {
		defer close(c.done)
		buf := make([]byte, 1<<16)
		for {
			n, err := c.f.Read(buf)
			if err != nil {
				return
			}
			c.mu.Lock()
			c.frames = append(c.frames, bytes.Clone(buf[:n]))
			c.mu.Unlock()
		}
	}()
	t.Cleanup(func() { c.f.Close(); <-c.done })
	return c
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// stop ends the capture and returns the TCP payload of each flow over
// IPv4, in the order captured. SOCK_DGRAM frames start at the IP header.
func (c *capture) stop(t *testing.T) map[flow][]byte {
	t.Helper()
	c.f.Close()
	<-c.done
	c.mu.Lock()
	defer c.mu.Unlock()
	flows := map[flow][]byte{}
	for _, p := range c.frames {
		if len(p) < 20 || p[0]>>4 != 4 || p[9] != unix.IPPROTO_TCP {
			continue
		}
		ihl := int(p[0]&0x0f) * 4
		total := int(binary.BigEndian.Uint16(p[2:]))
		if total > len(p) || ihl+20 > total {
			continue
		}
		tcp := p[ihl:total]
		off := int(tcp[12]>>4) * 4
		if off > len(tcp) {
			continue
		}
		f := flow{src: net.IP(p[12:16]).String(), dst: net.IP(p[16:20]).String(),
			srcPort: binary.BigEndian.Uint16(tcp[0:]), dstPort: binary.BigEndian.Uint16(tcp[2:])}
		flows[f] = append(flows[f], tcp[off:]...)
	}
	return flows
}

// has reports whether any flow carries s in the clear.
func (c *capture) has(flows map[flow][]byte, s string) bool {
	for _, data := range flows {
		if bytes.Contains(data, []byte(s)) {
			return true
		}
	}
	return false
}
