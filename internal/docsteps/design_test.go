package docsteps

import (
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// packageRow matches a row of the package table in DESIGN.md.
var packageRow = regexp.MustCompile("(?m)^\\| `([a-z0-9/]+)` \\| ")

// DESIGN.md's package table names every package a binary links, and lists
// them in an order in which each imports only packages above it, as the
// text under the table says. Test helpers are named in the paragraph after
// it.
func TestDesignNamesEveryPackageInImportOrder(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("go command not found: %v", err)
	}
	data, err := os.ReadFile("../../DESIGN.md")
	if err != nil {
		t.Fatal(err)
	}
	design := string(data)
	_, table, found := strings.Cut(design, "| Package | Job |\n")
	if !found {
		t.Fatal("DESIGN.md has no package table")
	}
	table, _, _ = strings.Cut(table, "\n\n")
	row := map[string]int{}
	for i, m := range packageRow.FindAllStringSubmatch(table, -1) {
		if _, twice := row[m[1]]; twice {
			t.Errorf("DESIGN.md names %s twice in its package table", m[1])
		}
		row[m[1]] = i
	}

	const module = "github.com/interlink-go/interlink/"
	out, err := exec.Command(gobin, "list", "-json=ImportPath,Imports", module+"...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p struct {
			ImportPath string
			Imports    []string
		}
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		name, internal := strings.CutPrefix(p.ImportPath, module+"internal/")
		if !internal {
			continue // the binaries, under cmd/
		}
		at, listed := row[name]
		if !listed {
			// A helper only tests use is named in the text instead.
			if !strings.Contains(design, "`"+name+"`") {
				t.Errorf("DESIGN.md does not name package %s", name)
			}
			continue
		}
		for _, imp := range p.Imports {
			dep, ok := strings.CutPrefix(imp, module+"internal/")
			if !ok {
				continue
			}
			if depAt, ok := row[dep]; !ok {
				t.Errorf("%s imports %s, which the package table does not list", name, dep)
			} else if depAt >= at {
				t.Errorf("%s imports %s, listed below it in DESIGN.md's package table", name, dep)
			}
		}
	}
}
