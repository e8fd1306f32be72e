package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/interlink-go/interlink/internal/identity"
)

const keygenUsage = `Usage: interlink-mcp keygen --out PATH [--force]

Creates a new Ed25519 identity: writes its secret key file to PATH with mode
0600, creating missing folders with mode 0700, and prints the public key and
its fingerprint.

Options:
    --out PATH  where to write the secret key file (default: $INTERLINK_KEY)
    --force     replace an existing key file; the old key is lost for good
    -h, --help  show this help
`

const keygenHint = "run 'interlink-mcp keygen --help' for its usage"

// keygenConfig is the validated command line of keygen.
type keygenConfig struct {
	out   string // the key file path as given
	force bool   // replace an existing file
}

// keygen implements "interlink-mcp keygen".
func (c *cli) keygen(args []string) int {
	cfg, code, ok := c.keygenConfig(args)
	if !ok {
		return code
	}

	// Draw the seed before touching the disk, so a failure here leaves
	// neither a file nor a folder behind.
	seed, err := identity.GenerateSeed(c.random)
	if err != nil {
		return c.fail(exitError, fmt.Sprintf("keygen: %v", err))
	}
	defer clear(seed)
	signer, err := identity.NewSigner(seed)
	if err != nil {
		return c.fail(exitError, fmt.Sprintf("keygen: %v", err))
	}
	data := identity.EncodeKeyFile(seed)
	defer clear(data)

	if err := writeKeyFile(cfg.out, data, cfg.force); err != nil {
		if errors.Is(err, errKeyExists) {
			return c.fail(exitError, fmt.Sprintf("keygen: %s already exists", cfg.out),
				"use --force to replace it; the old key is lost for good")
		}
		return c.fail(exitError, fmt.Sprintf("keygen: %v", err))
	}

	pub := signer.Public()
	fmt.Fprintf(c.stdout, "secret key : %s\n", cfg.out)
	fmt.Fprintf(c.stdout, "public key : %s\n", pub)
	fmt.Fprintf(c.stdout, "fingerprint: %s\n", pub.Fingerprint())
	fmt.Fprint(c.stdout, "\nAdd this to the other side's peers.json, under a name of their choice:\n")
	fmt.Fprintf(c.stdout, "{ \"your-petname-for-me\": { \"key\": \"%s\" } }\n", pub)
	return exitOK
}

// keygenConfig parses args. When ok is false the problem has been reported
// and code is the status to exit with.
func (c *cli) keygenConfig(args []string) (cfg keygenConfig, code int, ok bool) {
	fset := newFlagSet("keygen")
	fset.StringVar(&cfg.out, "out", "", "")
	fset.BoolVar(&cfg.force, "force", false, "")
	if code, ok := c.parseFlags(fset, args, keygenUsage, "keygen: ", exitUsage, keygenHint); !ok {
		return cfg, code, false
	}
	// An explicit --out wins over the environment; an empty value counts as
	// not given at all.
	if cfg.out == "" {
		cfg.out = c.getenv("INTERLINK_KEY")
	}
	if cfg.out == "" {
		return cfg, c.fail(exitUsage, "keygen: no key file path: give --out / INTERLINK_KEY",
			"for example: interlink-mcp keygen --out ~/.config/interlink/id.key"), false
	}
	return cfg, exitOK, true
}

// errKeyExists reports that the key file is already there and was left alone.
var errKeyExists = errors.New("key file already exists")

// writeKeyFile stores data at path with mode 0600, first creating missing
// parent folders with mode 0700. Without replace an existing file is an
// error wrapping [errKeyExists] and is not touched; with replace it is swapped
// for the new content in one rename.
func writeKeyFile(path string, data []byte, replace bool) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	if replace {
		return replaceFile(path, data)
	}
	return createFile(path, data)
}

// createFile writes data to a file at path that must not exist yet.
//
// O_EXCL makes the existence check and the creation a single step, so a file
// appearing in between is never overwritten, and the mode is set by that same
// open, so the secret is never readable by others, not even for a moment. A
// symlink at path counts as existing and is not followed.
func createFile(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%w: %s", errKeyExists, path)
	}
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		// The umask can only have cleared bits; state the mode outright.
		err = os.Chmod(path, 0o600)
	}
	if err != nil {
		// The file is ours and incomplete: a partial key must not stay.
		os.Remove(path)
		return err
	}
	return nil
}

// replaceFile puts data at path whether or not a file is there.
//
// The data goes to a temporary file in the same folder, created with mode
// 0600 and O_EXCL by [os.CreateTemp], is synced to disk, and is then renamed
// over path. A crash at any point leaves either the old key or the complete
// new one at path, never a partial file. The rename brings the temporary
// file's mode along, so a looser mode on the old file does not survive; the
// explicit chmod afterwards states it all the same.
func replaceFile(path string, data []byte) (err error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			os.Remove(tmp.Name())
		}
	}()
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	return os.Chmod(path, 0o600)
}
