package doctor

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/policy"
	"github.com/interlink-go/interlink/internal/statefile"
)

// lowSpace is the free space below which the state folder gets a warning:
// a mailbox holds up to 32 MiB, and a full disk stops messages from being
// stored (they wait on the relay).
const lowSpace = 100 << 20

// key checks the key file and returns the identity it holds.
func (r *report) key(cfg Config) (identity.PublicKey, bool) {
	const id, name = "key", "key file"
	if err := statefile.Check(cfg.KeyPath); err != nil {
		r.add(id, name, Fail, err.Error(), "put the key file there, or point --key / INTERLINK_KEY at it")
		return identity.PublicKey{}, false
	}
	s, err := identity.LoadKeyFile(cfg.KeyPath)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		r.add(id, name, Fail, fmt.Sprintf("no key file at %s", cfg.KeyPath),
			fmt.Sprintf("create one: interlink-mcp keygen --out %s (or point --key / INTERLINK_KEY at yours)", cfg.KeyPath))
		return identity.PublicKey{}, false
	case errors.Is(err, fs.ErrPermission):
		r.add(id, name, Fail, fmt.Sprintf("cannot read %s: permission denied", cfg.KeyPath),
			"run as the user who owns the key, or fix its owner")
		return identity.PublicKey{}, false
	case err != nil:
		r.add(id, name, Fail, fmt.Sprintf("%s does not hold a key: %v", cfg.KeyPath, err),
			"restore it from a backup, or create a new identity with keygen (peers must then list the new key)")
		return identity.PublicKey{}, false
	}
	own := s.Public()
	if perm, exposed, err := identity.KeyFileExposed(cfg.KeyPath); err == nil && exposed {
		r.add(id, name, Warn, fmt.Sprintf("identity %s, but %s is readable by others (mode %04o): they could sign as you",
			own.Fingerprint(), cfg.KeyPath, perm), "chmod 600 "+cfg.KeyPath)
		return own, true
	}
	r.add(id, name, OK, fmt.Sprintf("identity %s (%s)", own.Fingerprint(), cfg.KeyPath), "")
	return own, true
}

// peers checks that peers.json loads and that every key in it can sign.
func (r *report) peers(cfg Config) {
	const id, name = "peers", "peers.json"
	st, err := policy.Open(cfg.PeersPath)
	var p *policy.Policy
	if err == nil {
		p, err = st.Load()
	}
	switch {
	case errors.Is(err, policy.ErrMissing) || errors.Is(err, fs.ErrNotExist):
		r.add(id, name, Fail, fmt.Sprintf("no peers file at %s; the server does not start without one", cfg.PeersPath),
			fmt.Sprintf("create it with no peers: echo '{}' > %s", cfg.PeersPath))
		return
	case err != nil:
		r.add(id, name, Fail, oneLine(err.Error()),
			fmt.Sprintf("edit %s (see docs/PEERS.md); the server refuses the whole file until it is fixed", cfg.PeersPath))
		return
	}
	var weak []string
	for _, e := range p.Entries() {
		if e.Key.SmallOrder() {
			weak = append(weak, e.Name)
		}
	}
	if len(weak) > 0 {
		r.add(id, name, Warn, fmt.Sprintf("%s: %s can never send a message that verifies (small-order key)",
			cfg.PeersPath, strings.Join(weak, ", ")), "remove them with remove_peer, or ask them for their real key")
		return
	}
	r.add(id, name, OK, fmt.Sprintf("%d %s in %s", p.Len(), plural(p.Len(), "peer", "peers"), cfg.PeersPath), "")
}

// state checks the state folder: a folder, writable, with room.
func (r *report) state(cfg Config) {
	const id, name = "state", "state folder"
	fi, err := os.Stat(cfg.StateRoot)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		r.add(id, name, OK, fmt.Sprintf("%s does not exist yet; the server creates it when it starts", cfg.StateRoot), "")
		return
	case err != nil:
		r.add(id, name, Fail, oneLine(err.Error()), "fix the folder's permissions, or set --state-dir / INTERLINK_STATE_DIR")
		return
	case !fi.IsDir():
		r.add(id, name, Fail, fmt.Sprintf("%s is not a folder", cfg.StateRoot), "move the file away, or set --state-dir / INTERLINK_STATE_DIR")
		return
	}
	if err := writable(cfg.StateRoot); err != nil {
		r.add(id, name, Fail, fmt.Sprintf("%s is not writable: %v", cfg.StateRoot, err),
			"fix its owner or mode, or set --state-dir / INTERLINK_STATE_DIR")
		return
	}
	free, ok := freeSpace(cfg.StateRoot)
	if ok && free < lowSpace {
		r.add(id, name, Warn, fmt.Sprintf("%s has %s free: a full disk stops messages from being stored", cfg.StateRoot, bytes(free)),
			"free some space on that disk")
		return
	}
	detail := cfg.StateRoot + ", writable"
	if ok {
		detail += ", " + bytes(free) + " free"
	}
	r.add(id, name, OK, detail, "")
}

// oneLine keeps the first line of s.
func oneLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// bytes renders n in binary units.
func bytes(n uint64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}
