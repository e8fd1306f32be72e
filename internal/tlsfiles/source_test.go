package tlsfiles

import (
	"bytes"
	"crypto/tls"
	"errors"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time          { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) advance(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }

// serve runs a TLS listener on loopback with cfg, completing handshakes
// and closing, until the test ends.
func serve(t testing.TB, cfg *tls.Config) string {
	t.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.SetDeadline(time.Now().Add(5 * time.Second))
			c.(*tls.Conn).Handshake()
			c.Close()
		}
	}()
	return ln.Addr().String()
}

// servedSerial handshakes with addr trusting ca and returns the serial of
// the certificate served.
func servedSerial(t testing.TB, addr string, ca *authority) int64 {
	t.Helper()
	d := &net.Dialer{Timeout: 5 * time.Second}
	c, err := tls.DialWithDialer(d, "tcp", addr, &tls.Config{RootCAs: ca.pool})
	if err != nil {
		t.Fatalf("handshake: %v", err)
	}
	defer c.Close()
	return c.ConnectionState().PeerCertificates[0].SerialNumber.Int64()
}

// TestReloadAfterFilesReplaced serves a pair, replaces both files, and
// checks that handshakes get the new certificate once the check interval
// has passed, and not before.
func TestReloadAfterFilesReplaced(t *testing.T) {
	ca := newAuthority(t)
	dir := t.TempDir()
	cf, kf := writePair(t, dir, ca.issue(t, leafSpec{serial: 10}))
	clk := &clock{t: time.Unix(1700000000, 0)}
	var logs lockedBuffer
	src, err := Load(cf, kf, &Options{Now: clk.now, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	addr := serve(t, src.ServerConfig())
	if got := servedSerial(t, addr, ca); got != 10 {
		t.Fatalf("served serial %d, want 10", got)
	}
	writePair(t, dir, ca.issue(t, leafSpec{serial: 11}))
	if got := servedSerial(t, addr, ca); got != 10 {
		t.Errorf("within the check interval: served %d, want still 10", got)
	}
	clk.advance(DefaultCheckEvery)
	if got := servedSerial(t, addr, ca); got != 11 {
		t.Errorf("after the files changed: served %d, want 11", got)
	}
	if !strings.Contains(logs.String(), "tls certificate reloaded") {
		t.Errorf("reload not logged: %s", logs.String())
	}
	// Rewritten in place (same inode) with new content counts as well.
	third := ca.issue(t, leafSpec{serial: 12})
	if err := os.WriteFile(kf, third.keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cf, third.certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(time.Minute) // a distinct mtime, whatever the file system's granularity
	os.Chtimes(cf, later, later)
	clk.advance(DefaultCheckEvery)
	if got := servedSerial(t, addr, ca); got != 12 {
		t.Errorf("after an in-place rewrite: served %d, want 12", got)
	}
}

// TestBrokenPairKeepsOldCertificate replaces the files with broken pairs
// (a key of another certificate, a half-written certificate, a missing
// key) and checks that the old certificate keeps being served, that each
// broken state is logged once however many handshakes see it, and that a
// good pair afterwards is picked up.
func TestBrokenPairKeepsOldCertificate(t *testing.T) {
	ca := newAuthority(t)
	dir := t.TempDir()
	first := ca.issue(t, leafSpec{serial: 20})
	cf, kf := writePair(t, dir, first)
	clk := &clock{t: time.Unix(1700000000, 0)}
	var logs lockedBuffer
	src, err := Load(cf, kf, &Options{Now: clk.now, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	addr := serve(t, src.ServerConfig())
	next := ca.issue(t, leafSpec{serial: 21})

	broken := []struct {
		name  string
		apply func()
	}{
		{"certificate of another key", func() { replace(t, cf, next.certPEM) }},
		{"half-written certificate", func() { replace(t, cf, next.certPEM[:len(next.certPEM)/2]) }},
		{"key missing", func() { replace(t, cf, next.certPEM); os.Remove(kf) }},
	}
	for i, b := range broken {
		b.apply()
		for range 3 {
			clk.advance(DefaultCheckEvery)
			if got := servedSerial(t, addr, ca); got != 20 {
				t.Fatalf("%s: served %d, want the old 20", b.name, got)
			}
		}
		if n := strings.Count(logs.String(), "do not load"); n != i+1 {
			t.Errorf("%s: %d warnings logged in all, want %d (one per broken state):\n%s", b.name, n, i+1, logs.String())
		}
	}
	replace(t, kf, next.keyPEM)
	clk.advance(DefaultCheckEvery)
	if got := servedSerial(t, addr, ca); got != 21 {
		t.Errorf("after the pair was completed: served %d, want 21", got)
	}
}

// TestLoadFailsPlainly refuses to start without a usable pair, naming the
// files.
func TestLoadFailsPlainly(t *testing.T) {
	ca := newAuthority(t)
	dir := t.TempDir()
	a, b := ca.issue(t, leafSpec{serial: 1}), ca.issue(t, leafSpec{serial: 2})
	cf, kf := writePair(t, dir, a)
	otherKey := filepath.Join(dir, "other.key")
	replace(t, otherKey, b.keyPEM)
	for name, pair := range map[string][2]string{
		"missing cert":  {filepath.Join(dir, "nope.pem"), kf},
		"missing key":   {cf, filepath.Join(dir, "nope.key")},
		"key mismatch":  {cf, otherKey},
		"key as cert":   {kf, kf},
		"cert as key":   {cf, cf},
		"empty strings": {"", ""},
	} {
		_, err := Load(pair[0], pair[1], nil)
		if err == nil {
			t.Errorf("%s: loaded", name)
			continue
		}
		if !strings.Contains(err.Error(), pair[0]) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error %q does not name the certificate file on one line", name, err)
		}
		// The command that loads the pair says what is wrong in its own
		// words: the reason, without the package's prefix.
		pe, ok := errors.AsType[*PairError](err)
		if !ok || pe.CertFile != pair[0] || pe.KeyFile != pair[1] || pe.Err == nil ||
			err.Error() != "tlsfiles: "+pe.Reason() || !strings.HasPrefix(pe.Reason(), "certificate "+pair[0]+" with key "+pair[1]+": ") {
			t.Errorf("%s: err = %#v (%v), want a *PairError naming both files", name, err, err)
		}
	}
}

// TestServerConfigRefusesOldTLS checks that a client offering at most
// TLS 1.1 gets no connection.
func TestServerConfigRefusesOldTLS(t *testing.T) {
	ca := newAuthority(t)
	cf, kf := writePair(t, t.TempDir(), ca.issue(t, leafSpec{serial: 1}))
	src, err := Load(cf, kf, nil)
	if err != nil {
		t.Fatal(err)
	}
	addr := serve(t, src.ServerConfig())
	d := &net.Dialer{Timeout: 5 * time.Second}
	c, err := tls.DialWithDialer(d, "tcp", addr, &tls.Config{RootCAs: ca.pool, MaxVersion: tls.VersionTLS11})
	if err == nil {
		c.Close()
		t.Fatal("TLS 1.1 handshake succeeded")
	}
	if got := servedSerial(t, addr, ca); got != 1 {
		t.Errorf("served %d with a modern client, want 1", got)
	}
}
