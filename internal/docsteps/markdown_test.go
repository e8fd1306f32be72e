package docsteps

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// A shell block in a document may be preceded, on the line right above its
// opening fence, by one of two markers:
//
//	<!-- walkthrough: not run: REASON -->
//	<!-- walkthrough: shortened with FLAGS -->
//
// The first says the walkthrough cannot run the block, and why (it needs
// systemd, a second machine, an interactive program). The second lets the
// walkthrough append some of FLAGS to the block's commands, so that a
// benchmark documented to run for minutes runs for a moment; only the
// flags in shorteningFlags may be named. Every command of an unmarked
// block is run exactly as written.
const markerPrefix = "<!-- walkthrough:"

// shorteningFlags are the flags a "shortened with" marker may name: they
// change how long a run lasts or how much it loads, never what it does.
// --duration and --rounds are interlink-bus bench's; --idle and --polls
// its numbers of parked polls; -benchtime and -count go test's.
var shorteningFlags = []string{"duration", "rounds", "idle", "polls", "benchtime", "count"}

// shellLangs are the info strings of fenced blocks that hold commands.
// A fence without one holds commands only in its lines that start with a
// "$ " prompt (a transcript); otherwise it is output or a file.
var shellLangs = []string{"sh", "bash", "shell", "console"}

// block is one fenced block of commands in a document.
type block struct {
	doc  string
	line int // of the opening fence, from 1
	// notRun is the reason a "not run" marker gives; "" when unmarked.
	notRun string
	// shortened holds the flags of a "shortened with" marker, as
	// name=value pairs.
	shortened []string
	cmds      []string
}

// where names the block for a message.
func (b block) where() string { return fmt.Sprintf("%s:%d", b.doc, b.line) }

// documentBlocks returns the blocks of commands in the given section of
// the Markdown file at path ("" for the whole file). A marker that is
// malformed or stands above no block of commands fails the test.
func documentBlocks(t *testing.T, path, section string) []block {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	first := 1
	if section != "" {
		i := strings.Index(text, "\n"+section+"\n")
		if i < 0 {
			t.Fatalf("%s has no section %q", path, section)
		}
		first += strings.Count(text[:i+1], "\n")
		text = text[i+1:]
		if j := strings.Index(text[len(section):], "\n## "); j >= 0 {
			text = text[:len(section)+j]
		}
	}
	blocks, errs := parseBlocks(path, text, first)
	for _, err := range errs {
		t.Error(err)
	}
	return blocks
}

// parseBlocks returns the blocks of commands in text, the part of the
// document doc that starts on line first, and an error for each marker
// that is malformed or stands above no block of commands.
func parseBlocks(doc, text string, first int) ([]block, []error) {
	lines := strings.Split(text, "\n")
	var blocks []block
	var errs []error
	for i := 0; i < len(lines); i++ {
		line := strings.TrimSpace(lines[i])
		if strings.HasPrefix(line, markerPrefix) {
			if i+1 == len(lines) || !strings.HasPrefix(strings.TrimSpace(lines[i+1]), "```") {
				errs = append(errs, fmt.Errorf("%s:%d: a walkthrough marker must stand on the line right above a block's opening fence", doc, first+i))
			}
			continue
		}
		if !strings.HasPrefix(line, "```") {
			continue
		}
		lang := strings.TrimSpace(strings.TrimPrefix(line, "```"))
		j := i + 1
		for j < len(lines) && !strings.HasPrefix(strings.TrimSpace(lines[j]), "```") {
			j++
		}
		body := lines[i+1 : min(j, len(lines))]
		b := block{doc: doc, line: first + i}
		switch {
		case lang == "console" || lang == "":
			b.cmds = promptCommands(body)
		case slices.Contains(shellLangs, lang):
			b.cmds = shellCommands(body)
		}
		var marker string
		if i > 0 && strings.HasPrefix(strings.TrimSpace(lines[i-1]), markerPrefix) {
			marker = strings.TrimSpace(lines[i-1])
		}
		i = j
		switch {
		case len(b.cmds) == 0 && marker != "":
			errs = append(errs, fmt.Errorf("%s: a walkthrough marker above a block without commands", b.where()))
			continue
		case len(b.cmds) == 0:
			continue
		case marker != "":
			if err := b.parseMarker(marker); err != nil {
				errs = append(errs, fmt.Errorf("%s: %v", b.where(), err))
			}
		}
		blocks = append(blocks, b)
	}
	return blocks, errs
}

// markerRE splits a marker into its kind and argument.
var markerRE = regexp.MustCompile(`^<!-- walkthrough: (not run:|shortened with) (.*?) ?-->$`)

// parseMarker sets b's marker from its line.
func (b *block) parseMarker(marker string) error {
	m := markerRE.FindStringSubmatch(marker)
	if m == nil {
		return fmt.Errorf("malformed marker %q: want %q or %q", marker,
			"<!-- walkthrough: not run: REASON -->", "<!-- walkthrough: shortened with FLAGS -->")
	}
	arg := strings.TrimSpace(m[2])
	if m[1] == "not run:" {
		if arg == "" {
			return fmt.Errorf("marker %q gives no reason", marker)
		}
		b.notRun = arg
		return nil
	}
	pairs, err := flagPairs(arg)
	if err != nil {
		return fmt.Errorf("marker %q: %v", marker, err)
	}
	for _, p := range pairs {
		name, _, _ := strings.Cut(p, "=")
		if !slices.Contains(shorteningFlags, name) {
			return fmt.Errorf("marker %q: -%s does not only shorten a run; the flags it may name are %v", marker, name, shorteningFlags)
		}
	}
	b.shortened = pairs
	return nil
}

// flagPairs reads flags written "-name=value", "--name=value", "-name
// value" or "--name value" and returns them as name=value pairs.
func flagPairs(s string) ([]string, error) {
	words := strings.Fields(s)
	if len(words) == 0 {
		return nil, fmt.Errorf("no flags")
	}
	var pairs []string
	for i := 0; i < len(words); i++ {
		w := words[i]
		if !strings.HasPrefix(w, "-") {
			return nil, fmt.Errorf("%q is not a flag", w)
		}
		name, value, ok := strings.Cut(strings.TrimLeft(w, "-"), "=")
		if !ok {
			if i+1 == len(words) {
				return nil, fmt.Errorf("%s has no value", w)
			}
			i++
			value = words[i]
		}
		pairs = append(pairs, name+"="+value)
	}
	return pairs, nil
}

// runAs reports whether the script line run is cmd as written, or cmd
// with flags appended that all stand in b's "shortened with" marker.
func (b block) runAs(cmd, run string) bool {
	if run == cmd {
		return true
	}
	rest, ok := strings.CutPrefix(run, cmd+" ")
	if !ok || b.shortened == nil {
		return false
	}
	pairs, err := flagPairs(rest)
	if err != nil {
		return false
	}
	for _, p := range pairs {
		if !slices.Contains(b.shortened, p) {
			return false
		}
	}
	return true
}

// shellCommands returns the command lines of a shell block: lines joined
// where one ends in a backslash, without comments and blank lines.
func shellCommands(body []string) []string {
	var cmds []string
	var cont string
	for _, line := range body {
		line = strings.TrimSpace(line)
		if next, ok := strings.CutSuffix(line, `\`); ok {
			cont += next
			continue
		}
		line = cont + line
		cont = ""
		if c := stripComment(line); c != "" {
			cmds = append(cmds, c)
		}
	}
	return cmds
}

// promptCommands returns the commands of a transcript: what follows the
// "$ " prompt on its lines.
func promptCommands(body []string) []string {
	var cmds []string
	for _, line := range body {
		if c, ok := strings.CutPrefix(strings.TrimSpace(line), "$ "); ok {
			if c = stripComment(c); c != "" {
				cmds = append(cmds, c)
			}
		}
	}
	return cmds
}

// trailingComment matches a shell comment after a command: white space,
// then # to the end of the line.
var trailingComment = regexp.MustCompile(`\s+#.*$`)

// stripComment returns a shell line without its comment and surrounding
// blanks; a line that is only a comment gives "".
func stripComment(line string) string {
	line = strings.TrimSpace(line)
	if strings.HasPrefix(line, "#") {
		return ""
	}
	return strings.TrimSpace(trailingComment.ReplaceAllString(line, ""))
}
