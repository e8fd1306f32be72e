// Package tlsfiles serves a bus's TLS certificate from files that may be
// replaced while it runs, and turns the TLS errors a client meets into one
// plain sentence.
//
// # Server
//
// [Load] reads a certificate chain and its key (PEM files, as
// `--tls-cert FILE --tls-key FILE` name them) and fails with a plain error
// when they cannot be read or do not match, so a bus never starts without
// the certificate its operator meant. [Source.GetCertificate] hands the
// pair to every handshake and, at most every [DefaultCheckEvery], looks
// at both files' identity, size and modification time. When either
// changed it loads the pair again: a good pair replaces the old one for
// the following handshakes (connections already open keep theirs); a
// broken one (half written, a key of another certificate, a file gone)
// leaves the old certificate in place and is logged once, and it is tried
// again the next time either file changes. So a certificate renewed by a
// tool that writes the two files one after the other is picked up within
// seconds of the second write, with no restart and no window without a
// certificate. Only one handshake at a time looks at the files; the others
// use the current pair meanwhile, and no lock is held while reading them.
//
// [Source.ServerConfig] asks for TLS 1.2 at least: older versions have
// known weaknesses, and every client interlink supports speaks 1.2 or 1.3.
//
// # Client
//
// [Explain] says what went wrong for the TLS errors a person can act on:
// a certificate from an authority the machine does not trust, one for
// another name, one outside its validity, and the two ways of speaking
// the wrong protocol to a port. The last of those, plain HTTP to a TLS
// port, arrives as an answer rather than an error; [CheckResponse] turns
// it into [ErrPlainHTTPToTLS].
package tlsfiles
