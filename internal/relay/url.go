package relay

import (
	"fmt"
	"net/url"
	"strings"
	"unicode"
)

// ParseURLs turns the configured relay list into base URLs. Each element of
// list may itself hold several URLs separated by commas. Items are trimmed,
// empty items are dropped, trailing slashes are removed, and duplicates are
// dropped keeping the first. Every URL must use the http or https scheme
// in any case, name a host
// and hold no white space or control character; it may carry a path prefix
// (http://host:port/prefix) but no query, fragment or user information,
// because request paths are appended to it.
//
// Every refused URL yields an error wrapping [ErrBadURL]; a list with no URL
// at all yields [ErrNoURL].
func ParseURLs(list []string) ([]string, error) {
	var out []string
	seen := make(map[string]bool)
	for _, elem := range list {
		for item := range strings.SplitSeq(elem, ",") {
			item = strings.TrimRight(strings.TrimSpace(item), "/")
			if item == "" {
				continue
			}
			if err := checkURL(item); err != nil {
				return nil, err
			}
			if !seen[item] {
				seen[item] = true
				out = append(out, item)
			}
		}
	}
	if len(out) == 0 {
		return nil, ErrNoURL
	}
	return out, nil
}

// checkURL reports why raw cannot serve as a relay base URL, if it cannot.
func checkURL(raw string) error {
	if !strings.Contains(raw, "://") {
		// "127.0.0.1:9440" or "bus.lan": the scheme was left out. Go's
		// parser would call the first a bad path and the second a path.
		if u, err := url.Parse("http://" + raw); err == nil && u.Hostname() != "" {
			return fmt.Errorf("%w %q: no scheme; did you mean %q?", ErrBadURL, raw, "http://"+raw)
		}
	}
	u, err := url.Parse(raw)
	if err != nil {
		// url.Error repeats the URL; keep only the reason.
		if ue, ok := err.(*url.Error); ok {
			err = ue.Err
		}
		return fmt.Errorf("%w %q: %w", ErrBadURL, raw, err)
	}
	if i := strings.IndexFunc(raw, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }); i >= 0 {
		// A blank inside a base URL is almost always a typo in a list, and
		// the request paths appended to it would carry it to the bus.
		return fmt.Errorf("%w %q: white space or a control character inside the URL", ErrBadURL, raw)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		// Any other scheme (a typo, ws://, a scheme in capitals) is
		// refused rather than guessed at: guessing could send requests
		// in plain text to a relay meant to be reached over TLS.
		return fmt.Errorf("%w %q: use an https:// URL, or http:// on loopback or a private network", ErrBadURL, raw)
	}
	if u.Host == "" || u.Hostname() == "" {
		return fmt.Errorf("%w %q: no host", ErrBadURL, raw)
	}
	if u.User != nil {
		// Failure texts quote the URL, and the bus checks no credentials.
		return fmt.Errorf("%w %q: user information is not supported", ErrBadURL, raw)
	}
	if u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.Contains(raw, "#") {
		return fmt.Errorf("%w %q: a query or fragment cannot be followed by a request path", ErrBadURL, raw)
	}
	return nil
}
