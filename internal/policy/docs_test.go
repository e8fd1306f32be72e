package policy

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/interlink-go/interlink/internal/lookalike"
)

// The examples of names that docs/PEERS.md, docs/DISCOVERY.md and
// SECURITY.md give get the outcome the documents say. Each example shown
// in backticks must still be in its document, so the table and the
// documents change together; names with an invisible character, which a
// document describes in words, are built here.
func TestDocumentedNameExamples(t *testing.T) {
	docs := map[string]string{}
	for _, d := range []string{"../../docs/PEERS.md", "../../docs/DISCOVERY.md", "../../SECURITY.md"} {
		data, err := os.ReadFile(d)
		if err != nil {
			t.Fatal(err)
		}
		docs[d] = string(data)
	}
	const peers, discovery, security = "../../docs/PEERS.md", "../../docs/DISCOVERY.md", "../../SECURITY.md"
	// Outcomes.
	const (
		fine      = "a valid petname, not reserved"
		refused   = "refused as a petname"
		reserved  = "a spelling of self or Interlink"
		beside    = "reads like the petname beside it"
		apart     = "does not read like the petname beside it"
		toFinger  = "a claimed name listed under its fingerprint"
		claimable = "a claimed name kept as the petname"
	)
	examples := []struct {
		doc, shown, name, outcome, other string
	}{
		{doc: peers, shown: "bob laptop", outcome: fine},
		{doc: peers, shown: "ops/db-1", outcome: fine},
		{doc: peers, shown: "café", outcome: fine},
		{doc: peers, shown: "日本語", outcome: fine},
		{doc: peers, shown: "bob's mac", outcome: refused},
		{doc: peers, shown: "INTERLINK", outcome: reserved},
		{doc: peers, shown: "Ｉｎｔｅｒｌｉｎｋ", outcome: reserved},
		{doc: peers, shown: `Inter"link`, outcome: reserved},
		{doc: peers, shown: "<self>", outcome: reserved},
		{doc: peers, shown: "inter link", outcome: reserved},
		{doc: peers, shown: "І", name: "Іnterlink", outcome: reserved}, // a Cyrillic І
		{doc: peers, shown: "е", name: "sеlf", outcome: reserved},      // a Cyrillic е
		{doc: peers, shown: "ꓲ", name: "ꓲnterlink", outcome: reserved}, // Lisu
		{doc: peers, shown: "Ꭵ", name: "Ꭵnterlink", outcome: reserved}, // Cherokee
		{doc: peers, shown: "lnterlink", outcome: reserved},
		{doc: peers, shown: "seIf", outcome: reserved},
		{doc: peers, shown: "Seif", outcome: fine},
		{doc: peers, shown: "Interlinĸ", outcome: reserved},
		{doc: peers, name: "\u2800self", outcome: reserved}, // a braille blank before self
		{doc: peers, shown: "Bob", other: "bob", outcome: beside},
		{doc: peers, shown: "BOB", other: "bob", outcome: beside},
		{doc: peers, shown: "bоb", other: "bob", outcome: beside}, // a Cyrillic о
		{doc: peers, shown: "b.ob", other: "bob", outcome: beside},
		{doc: peers, name: "bob\u3164", other: "bob", outcome: beside}, // a Hangul filler after it
		{doc: peers, shown: "bob-2", other: "bob", outcome: apart},
		{doc: peers, shown: "bobby", other: "bob", outcome: apart},
		{doc: discovery, shown: "BOB-DESK", other: "bob-desk", outcome: beside},
		{doc: discovery, shown: "bоb-desk", other: "bob-desk", outcome: beside},
		{doc: discovery, shown: "BiII", other: "Bill", outcome: beside},
		{doc: discovery, shown: `Inter"link`, outcome: toFinger},
		{doc: discovery, shown: "<self>", outcome: toFinger},
		{doc: discovery, shown: "ꓲNTERLINK", outcome: toFinger},
		{doc: discovery, shown: "bob-desk", outcome: claimable},
		{doc: security, shown: "Interlinĸ", outcome: reserved},
		{doc: security, shown: "rnike", other: "mike", outcome: beside},
		{doc: security, shown: "rn", other: "m", outcome: beside},
		{doc: security, shown: "i", name: "ali", other: "all", outcome: apart}, // a small i apart from a small l
		{doc: security, shown: "l", name: "all", other: "ali", outcome: apart},
		{doc: security, shown: "ĸ", other: "k", outcome: apart},
		{doc: security, shown: "cl", other: "d", outcome: apart},
		{doc: security, shown: "vv", other: "w", outcome: apart},
	}
	// What SECURITY.md leaves out of scope is a claim about the code: every
	// example its look-alike paragraph there shows has a row above, so a
	// look-alike the code refuses cannot be listed as one that passes.
	for _, shown := range outOfScopeLookAlikes(t, docs[security]) {
		if !slices.ContainsFunc(examples, func(e struct{ doc, shown, name, outcome, other string }) bool {
			return e.doc == security && (e.shown == shown || e.other == shown)
		}) {
			t.Errorf("SECURITY.md's out-of-scope look-alikes show `%s`, which no row of this table checks", shown)
		}
	}
	for _, tc := range examples {
		name := tc.name
		if name == "" {
			name = tc.shown
		}
		if tc.shown != "" && !strings.Contains(docs[tc.doc], "`"+tc.shown+"`") {
			t.Errorf("%s no longer shows `%s`; keep this table in step with it", tc.doc, tc.shown)
		}
		var got bool
		switch tc.outcome {
		case fine:
			got = CheckPetname(name) == nil && !IsReserved(name)
		case refused:
			got = CheckPetname(name) != nil
		case reserved:
			got = IsReserved(name)
		case beside:
			got = lookalike.Alike(name, tc.other)
		case apart:
			got = !lookalike.Alike(name, tc.other)
		case toFinger:
			r := ReducePetname(name)
			got = r == "" || IsReserved(r)
		case claimable:
			r := ReducePetname(name)
			got = r == name && !IsReserved(r) && CheckPetname(r) == nil
		}
		if !got {
			t.Errorf("%s: %q (%+q) is not %s%s", tc.doc, name, name, tc.outcome, map[bool]string{true: " " + tc.other, false: ""}[tc.other != ""])
		}
	}
}

// outOfScopeLookAlikes returns what the look-alike paragraph of
// SECURITY.md's "Out of scope" shows in backticks.
func outOfScopeLookAlikes(t *testing.T, doc string) []string {
	t.Helper()
	_, scope, ok := strings.Cut(doc, "\n## Out of scope\n")
	if !ok {
		t.Fatal("SECURITY.md has no section \"Out of scope\"")
	}
	scope, _, _ = strings.Cut(scope, "\n## ")
	var para string
	for p := range strings.SplitSeq(scope, "\n- ") {
		if strings.HasPrefix(p, "**Look-alike") {
			para = p
		}
	}
	if para == "" {
		t.Fatal("SECURITY.md's \"Out of scope\" has no item on look-alike letters")
	}
	var shown []string
	for _, m := range regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(para, -1) {
		shown = append(shown, m[1])
	}
	return shown
}
