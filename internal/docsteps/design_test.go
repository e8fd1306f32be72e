package docsteps

import (
	"bytes"
	"encoding/json"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
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

// The bounds [TestPackagesAndTypesStayWithinTheirBounds] holds the code
// to: a package past them does more than one job, a type past them is
// the whole program again.
const (
	maxPackageLines = 2500 // non-test lines of one package directory
	maxTypeMethods  = 20   // methods declared on one type, in non-test files
	maxMCPMainLines = 1500 // non-test lines of cmd/interlink-mcp, below which it must stay
)

// TestPackagesAndTypesStayWithinTheirBounds reads every non-test Go file
// of the module's packages (those the go command lists, so not a harness
// built only under a test's own tag) and fails, naming the offender, for
// a package directory over [maxPackageLines] lines, a type with more than
// [maxTypeMethods] methods (on its value or its pointer, counted once by
// name across the files of every platform), or a cmd/interlink-mcp of
// [maxMCPMainLines] lines or more. Lines are counted as wc -l counts them,
// in the files of every build tag.
func TestPackagesAndTypesStayWithinTheirBounds(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("go command not found: %v", err)
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(gobin, "list", "-f", "{{.Dir}}", "github.com/interlink-go/interlink/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	lines := map[string]int{}               // package directory -> lines
	methods := map[string]map[string]bool{} // "dir.Type" -> method names
	fset := token.NewFileSet()
	for abs := range strings.Lines(strings.TrimSpace(string(out))) {
		abs = strings.TrimSuffix(abs, "\n")
		dir, err := filepath.Rel(root, abs)
		if err != nil {
			t.Fatal(err)
		}
		dir = filepath.ToSlash(dir)
		files, err := filepath.Glob(filepath.Join(abs, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, path := range files {
			if strings.HasSuffix(path, "_test.go") {
				continue
			}
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			lines[dir] += bytes.Count(data, []byte("\n"))
			f, err := parser.ParseFile(fset, path, data, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			for _, decl := range f.Decls {
				fn, ok := decl.(*ast.FuncDecl)
				if !ok || fn.Recv == nil || len(fn.Recv.List) == 0 {
					continue
				}
				typ := receiverType(fn.Recv.List[0].Type)
				if typ == "" {
					continue
				}
				key := dir + "." + typ
				if methods[key] == nil {
					methods[key] = map[string]bool{}
				}
				methods[key][fn.Name.Name] = true
			}
		}
	}
	if lines["internal/docsteps"] == 0 || lines["cmd/interlink-mcp"] == 0 {
		t.Fatalf("go list under %s named no files of internal/docsteps or cmd/interlink-mcp", root)
	}
	for _, dir := range slices.Sorted(maps.Keys(lines)) {
		if n := lines[dir]; n > maxPackageLines {
			t.Errorf("package %s has %d non-test lines, more than %d", dir, n, maxPackageLines)
		}
	}
	for _, typ := range slices.Sorted(maps.Keys(methods)) {
		if n := len(methods[typ]); n > maxTypeMethods {
			t.Errorf("type %s has %d methods, more than %d", typ, n, maxTypeMethods)
		}
	}
	if n := lines["cmd/interlink-mcp"]; n >= maxMCPMainLines {
		t.Errorf("cmd/interlink-mcp has %d non-test lines, want fewer than %d", n, maxMCPMainLines)
	}
}

// receiverType returns the name of the type of a method's receiver: T
// for T, *T, T[K] and *T[K].
func receiverType(e ast.Expr) string {
	for {
		switch x := e.(type) {
		case *ast.StarExpr:
			e = x.X
		case *ast.ParenExpr:
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.IndexListExpr:
			e = x.X
		case *ast.Ident:
			return x.Name
		default:
			return ""
		}
	}
}
