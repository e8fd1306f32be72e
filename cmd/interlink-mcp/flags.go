package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/interlink-go/interlink/internal/cmdline"
	"github.com/interlink-go/interlink/internal/paths"
	"github.com/interlink-go/interlink/internal/route"
)

// newFlagSet returns a flag set that prints nothing itself: errors and help
// are reported by parseFlags in the program's own format.
func newFlagSet(name string) *flag.FlagSet {
	fset := flag.NewFlagSet(name, flag.ContinueOnError)
	fset.SetOutput(io.Discard)
	fset.Usage = func() {}
	return fset
}

// parseFlags parses args, which may hold no positional argument. On -h or
// --help it prints usageText and returns exitOK, false. On a mistake it
// reports it, prefixed with prefix (the command's name and ": ", or ""),
// with hint when not empty, and returns code, false. Otherwise it returns
// true: go on.
func (c *cli) parseFlags(fset *flag.FlagSet, args []string, usageText, prefix string, code int, hint string) (int, bool) {
	var hints []string
	if hint != "" {
		hints = []string{hint}
	}
	if err := fset.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(c.stdout, usageText)
			return exitOK, false
		}
		return c.fail(code, prefix+err.Error(), hints...), false
	}
	if fset.NArg() > 0 {
		return c.fail(code, fmt.Sprintf("%sunexpected argument %q", prefix, fset.Arg(0)), hints...), false
	}
	return exitOK, true
}

// setting resolves one option from a flag, the environment and a default.
func (c *cli) setting(flagValue, flagName, envName, def string) (value, source string) {
	return cmdline.Setting(c.getenv, flagValue, flagName, envName, def)
}

// yesNo reads a yes-or-no setting whose default is yes.
func (c *cli) yesNo(flagValue, flagName, envName string) (bool, error) {
	value, source := c.setting(flagValue, flagName, envName, "yes")
	switch strings.ToLower(strings.TrimSpace(value)) {
	case "yes", "true", "1":
		return true, nil
	case "no", "false", "0":
		return false, nil
	}
	return false, fmt.Errorf("%s %q: want yes or no", source, value)
}

// configPath resolves a file option whose default lies in
// ~/.config/interlink.
func (c *cli) configPath(flagValue, flagName, envName, file string) (string, error) {
	if v, _ := c.setting(flagValue, flagName, envName, ""); v != "" {
		return v, nil
	}
	p, err := paths.ConfigFile(c.getenv, file)
	if err != nil {
		return "", fmt.Errorf("no %s given and no home folder for the default: set %s or %s", file, flagName, envName)
	}
	return p, nil
}

// stateRoot resolves the state root from --state-dir (flagValue),
// INTERLINK_STATE_DIR and the defaults under the home folder.
func (c *cli) stateRoot(flagValue string) (string, error) {
	explicit, _ := c.setting(flagValue, "--state-dir", "INTERLINK_STATE_DIR", "")
	return paths.StateRoot(c.getenv, explicit)
}

// sessionID returns the session a command acts for: the first of --session
// (flagValue, else INTERLINK_SESSION) and the fallbacks that is not blank,
// trimmed; "" when all are blank. A fallback is asked only when those
// before it are blank. err says why the id is not a valid session id
// ([route.ValidateSession]); an id is checked this one way, whichever
// command reads it.
func (c *cli) sessionID(flagValue string, fallbacks ...func() string) (id string, err error) {
	explicit, _ := c.setting(flagValue, "--session", "INTERLINK_SESSION", "")
	id = strings.TrimSpace(explicit)
	for _, next := range fallbacks {
		if id != "" {
			break
		}
		id = strings.TrimSpace(next())
	}
	if id == "" {
		return "", nil
	}
	return id, route.ValidateSession(id)
}

// executable returns the absolute path of this program.
func (c *cli) executable() (string, error) {
	p, err := os.Executable()
	if err != nil {
		return "", err
	}
	if r, err := filepath.EvalSymlinks(p); err == nil {
		p = r
	}
	return filepath.Abs(p)
}

// channelMode reports whether INTERLINK_CHANNELS turns Claude channels on:
// "1" or "true" in any case.
func channelMode(getenv func(string) string) bool {
	v := strings.TrimSpace(getenv("INTERLINK_CHANNELS"))
	return v == "1" || strings.EqualFold(v, "true")
}
