package tlsfiles

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"os"
	"sync/atomic"
	"time"
)

// DefaultCheckEvery is how often, at most, handshakes look at the files.
const DefaultCheckEvery = 5 * time.Second

// Options configure a [Source]; the zero value means the defaults.
type Options struct {
	// Logger receives one line per reload and per broken pair; nil
	// discards.
	Logger *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// CheckEvery is how often the files are looked at; 0 means
	// [DefaultCheckEvery].
	CheckEvery time.Duration
}

// Source holds a certificate loaded from a pair of files and reloads it
// when they change. It is safe for concurrent use.
type Source struct {
	certFile, keyFile string       // fixed at creation
	log               *slog.Logger // fixed at creation
	now               func() time.Time
	every             time.Duration // fixed at creation

	cert atomic.Pointer[tls.Certificate]

	// checking is held (true) by the one handshake looking at the files;
	// it guards the fields below, which only that handshake touches.
	checking  atomic.Bool
	lastCheck time.Time
	stamp     [2]fileStamp
}

// fileStamp is what tells that a file changed.
type fileStamp struct {
	info os.FileInfo // for os.SameFile: a file renamed into place
	mod  time.Time
	size int64
}

func (a fileStamp) same(b fileStamp) bool {
	if a.info == nil || b.info == nil {
		return a.info == nil && b.info == nil
	}
	return os.SameFile(a.info, b.info) && a.mod.Equal(b.mod) && a.size == b.size
}

func stampOf(path string) fileStamp {
	fi, err := os.Stat(path)
	if err != nil {
		return fileStamp{}
	}
	return fileStamp{info: fi, mod: fi.ModTime(), size: fi.Size()}
}

// Load reads the certificate chain in certFile and its private key in
// keyFile (PEM). It fails with a [*PairError] when either cannot be read
// or they do not match.
func Load(certFile, keyFile string, opts *Options) (*Source, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.CheckEvery <= 0 {
		o.CheckEvery = DefaultCheckEvery
	}
	s := &Source{certFile: certFile, keyFile: keyFile, log: o.Logger, now: o.Now, every: o.CheckEvery}
	// Stamp before reading, so a change during the read is seen later.
	stamp := [2]fileStamp{stampOf(certFile), stampOf(keyFile)}
	c, err := s.load()
	if err != nil {
		return nil, err
	}
	s.cert.Store(c)
	s.stamp = stamp
	s.lastCheck = o.Now()
	return s, nil
}

func (s *Source) load() (*tls.Certificate, error) {
	c, err := tls.LoadX509KeyPair(s.certFile, s.keyFile)
	if err != nil {
		return nil, &PairError{CertFile: s.certFile, KeyFile: s.keyFile, Err: err}
	}
	return &c, nil
}

// PairError reports a certificate and key pair that cannot be loaded: a
// file that cannot be read or is not PEM, or a key that does not match the
// certificate.
type PairError struct {
	CertFile, KeyFile string
	Err               error // what crypto/tls said
}

func (e *PairError) Error() string { return "tlsfiles: " + e.Reason() }

// Reason returns the error's message without the package's "tlsfiles: "
// prefix, for a command that names the files in its own error line.
func (e *PairError) Reason() string {
	return fmt.Sprintf("certificate %s with key %s: %v", e.CertFile, e.KeyFile, e.Err)
}

// GetCertificate returns the current certificate, after reloading it if
// the files changed since they were last looked at; see the package
// documentation. It never fails once [Load] succeeded.
func (s *Source) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	s.check()
	return s.cert.Load(), nil
}

// Certificate returns the current certificate without looking at the
// files.
func (s *Source) Certificate() *tls.Certificate { return s.cert.Load() }

// check reloads the pair when it is time to look and a file changed.
func (s *Source) check() {
	if !s.checking.CompareAndSwap(false, true) {
		return // another handshake is looking
	}
	defer s.checking.Store(false)
	now := s.now()
	if now.Sub(s.lastCheck) < s.every && !now.Before(s.lastCheck) {
		return
	}
	s.lastCheck = now
	stamp := [2]fileStamp{stampOf(s.certFile), stampOf(s.keyFile)}
	if stamp[0].same(s.stamp[0]) && stamp[1].same(s.stamp[1]) {
		return
	}
	s.stamp = stamp
	c, err := s.load()
	if err != nil {
		// Logged once per change: the files are loaded again only when
		// their stamps move.
		s.log.Warn("tls certificate files changed but do not load; keeping the previous certificate",
			"cert", s.certFile, "key", s.keyFile, "err", err)
		return
	}
	s.cert.Store(c)
	attrs := []any{"cert", s.certFile}
	if c.Leaf != nil {
		attrs = append(attrs, "not_after", c.Leaf.NotAfter.UTC().Format(time.RFC3339))
	}
	s.log.Info("tls certificate reloaded", attrs...)
}

// ServerConfig returns a TLS configuration that serves the source's
// certificate, TLS 1.2 at least.
func (s *Source) ServerConfig() *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: s.GetCertificate}
}
