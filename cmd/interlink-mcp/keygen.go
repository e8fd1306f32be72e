package main

import (
	"context"
	"errors"
	"fmt"
	"io"

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

// runKeygen implements "interlink-mcp keygen".
func runKeygen(c *cli, _ context.Context, args []string, _ io.Reader) int {
	cfg, code, ok := parseKeygen(c, args)
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
	if err := identity.WriteKeyFile(cfg.out, seed, cfg.force); err != nil {
		if errors.Is(err, identity.ErrKeyExists) {
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

// parseKeygen parses args. When ok is false the problem has been reported
// and code is the status to exit with.
func parseKeygen(c *cli, args []string) (cfg keygenConfig, code int, ok bool) {
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
