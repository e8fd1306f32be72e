package policy

import (
	"os"
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
	for _, tc := range []struct {
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
	} {
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
