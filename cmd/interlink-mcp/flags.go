package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
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
