package docsteps

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// goInstall matches a "go install MODULE/PATH@VERSION" a document shows.
var goInstall = regexp.MustCompile(`go install ([^\s@` + "`" + `]+)@(v[0-9][^\s` + "`" + `]*)`)

// A "go install PATH@VERSION" that a document shows for a module the
// build requires names the version go.mod requires, the one the tests
// run against: a document that tells the user to install a server the
// bus is tested with (nats-server) stays true when go.mod moves on.
func TestDocumentedInstallsNameTheTestedVersion(t *testing.T) {
	data, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	required := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^\s*(?:require\s+)?(\S+) (v\S+)`).FindAllStringSubmatch(string(data), -1) {
		required[m[1]] = m[2]
	}
	docs, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, doc := range append(docs, "../../README.md", "../../SECURITY.md") {
		data, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range goInstall.FindAllStringSubmatch(string(data), -1) {
			for mod, v := range required {
				if m[1] != mod && !strings.HasPrefix(m[1], mod+"/") {
					continue
				}
				checked++
				if m[2] != v {
					t.Errorf("%s shows %q; go.mod requires %s %s, the version the tests run against", doc, m[0], mod, v)
				}
			}
		}
	}
	if checked == 0 {
		t.Error("no document shows a go install of a module go.mod requires; DEPLOY.md shows how to install nats-server")
	}
}
