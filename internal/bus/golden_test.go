package bus

import (
	"bufio"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/txtar"
)

var update = flag.Bool("update", false, "rewrite the response sections of testdata/golden/*.txtar")

// TestGoldenExchanges replays the exchanges in testdata/golden against a fresh
// Server each, on the fake clock and the fake store (whose sequence starts
// at 1), so every response is byte-exact.
//
// Each archive holds numbered steps. "NN.request" is a request line
// ("METHOD target"), header lines, a blank line and the body (its final
// newline is dropped). "NN.response" is the status, the Content-Type and
// Allow headers when present, a blank line and the body. "NN.advance", if
// present, moves the clock by a duration before step NN.
func TestGoldenExchanges(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "golden", "*.txtar"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden files: %v", err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			ar, err := txtar.ParseFile(file)
			if err != nil {
				t.Fatal(err)
			}
			h, _ := newFakeHarness(t, 0)
			want := map[string][]byte{}
			for _, f := range ar.Files {
				if strings.HasSuffix(f.Name, ".response") {
					want[f.Name] = f.Data
				}
			}
			// out is the archive as -update writes it: each response
			// right after its request.
			var out []txtar.File
			changed := false
			for _, f := range ar.Files {
				step, kind, ok := strings.Cut(f.Name, ".")
				if !ok {
					t.Fatalf("section %q: want NN.request, NN.response or NN.advance", f.Name)
				}
				switch kind {
				case "advance":
					d, err := time.ParseDuration(strings.TrimSpace(string(f.Data)))
					if err != nil {
						t.Fatalf("%s: %v", f.Name, err)
					}
					h.clock.Add(d)
					out = append(out, f)
				case "request":
					got := formatResponse(h.srv, parseRequest(t, f.Name, f.Data))
					name := step + ".response"
					exp, ok := want[name]
					switch {
					case !ok && !*update:
						t.Errorf("%s has no response section; run with -update", f.Name)
					case string(exp) != string(got) && !*update:
						t.Errorf("%s:\n--- want\n%s--- got\n%s", f.Name, exp, got)
					}
					changed = changed || string(exp) != string(got)
					out = append(out, f, txtar.File{Name: name, Data: got})
				case "response":
				default:
					t.Fatalf("section %q: unknown kind %q", f.Name, kind)
				}
			}
			changed = changed && *update
			ar.Files = out
			if changed {
				if err := os.WriteFile(file, txtar.Format(ar), 0o644); err != nil {
					t.Fatal(err)
				}
				t.Logf("updated %s", file)
			}
		})
	}
}

// parseRequest reads a request section.
func parseRequest(tb testing.TB, name string, data []byte) *http.Request {
	tb.Helper()
	head, body, _ := strings.Cut(string(data), "\n\n")
	lines := strings.Split(head, "\n")
	method, target, ok := strings.Cut(lines[0], " ")
	if !ok {
		tb.Fatalf("%s: bad request line %q", name, lines[0])
	}
	req := httptest.NewRequest(method, target, strings.NewReader(strings.TrimSuffix(body, "\n")))
	for _, l := range lines[1:] {
		k, v, ok := strings.Cut(l, ":")
		if !ok {
			tb.Fatalf("%s: bad header line %q", name, l)
		}
		v = strings.TrimSpace(v)
		if strings.EqualFold(k, "Content-Length") {
			// A declared length larger than the body stands for a body
			// too large to keep in a fixture; the bus refuses it unread.
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				tb.Fatalf("%s: bad Content-Length %q", name, v)
			}
			req.ContentLength = n
			continue
		}
		req.Header.Set(k, v)
	}
	return req
}

// formatResponse serves req and formats the response as a response
// section.
func formatResponse(srv *Server, req *http.Request) []byte {
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, req)
	var b strings.Builder
	fmt.Fprintf(&b, "%d\n", rec.Code)
	for _, k := range []string{"Allow", "Content-Type"} {
		if v := rec.Header().Get(k); v != "" {
			fmt.Fprintf(&b, "%s: %s\n", k, v)
		}
	}
	b.WriteString("\n")
	if rec.Body.Len() > 0 && req.Method != http.MethodHead { // the server drops HEAD bodies
		b.Write(rec.Body.Bytes())
		b.WriteString("\n")
	}
	return []byte(b.String())
}

// TestGoldenCoverage checks that the fixtures exercise every endpoint and
// every status the bus answers with.
func TestGoldenCoverage(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("testdata", "golden", "*.txtar"))
	paths, statuses := map[string]bool{}, map[string]bool{}
	for _, file := range files {
		ar, err := txtar.ParseFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range ar.Files {
			sc := bufio.NewScanner(strings.NewReader(string(f.Data)))
			if !sc.Scan() {
				continue
			}
			switch {
			case strings.HasSuffix(f.Name, ".request"):
				_, target, _ := strings.Cut(sc.Text(), " ")
				path, _, _ := strings.Cut(target, "?")
				paths[path] = true
			case strings.HasSuffix(f.Name, ".response"):
				statuses[sc.Text()] = true
			}
		}
	}
	for path := range endpoints {
		// The status page is for people, not part of the wire contract,
		// and changes with every request; status_test.go covers it.
		if path == "/" {
			continue
		}
		if !paths[path] {
			t.Errorf("no golden request for %s", path)
		}
	}
	for _, s := range []string{"200", "202", "400", "403", "404", "405", "413", "415", "422"} {
		if !statuses[s] {
			t.Errorf("no golden response with status %s", s)
		}
	}
}
